package io.simhashindex.hfile;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** How often the submitting JVM asks its running jobs' status. */
class JobsTest {
  @Test
  void pollsAtHadoopsIntervalFirstThenATwentiethOfTheWaitUpToThreeIntervals() {
    assertEquals(1000, Jobs.pollMillis(0, 1000));
    assertEquals(1000, Jobs.pollMillis(20_000, 1000)); // a short step is followed each second
    assertEquals(2000, Jobs.pollMillis(40_000, 1000));
    assertEquals(3000, Jobs.pollMillis(60_000, 1000));
    assertEquals(3000, Jobs.pollMillis(3_600_000, 1000)); // never more than three intervals late
    assertEquals(5000, Jobs.pollMillis(10_000, 5000)); // a cluster's own interval is the floor
  }
}
