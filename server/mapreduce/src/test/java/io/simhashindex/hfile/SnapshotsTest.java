package io.simhashindex.hfile;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.hadoop.fs.Path;
import org.junit.jupiter.api.Test;

/** Which region boundaries a snapshot read refuses, and the names its snapshots take. */
class SnapshotsTest {
  @Test
  void boundariesBetweenPrefixGroupsAreKeptAndOnesInsideAGroupRefused() {
    assertFalse(Snapshots.cutsGroup(new byte[0])); // the table's first region
    assertFalse(Snapshots.cutsGroup(new byte[] {0x40, 0})); // schema apply's two-byte pre-split keys
    assertFalse(Snapshots.cutsGroup(new byte[] {1, 2, 3, 4, 5})); // KeyPrefixRegionSplitPolicy's
    assertFalse(Snapshots.cutsGroup(new byte[] {1, 2, 3, 4, 5, 0, 0, 0, 0, 0, 0, 0, 0})); // the group's first row
    assertTrue(Snapshots.cutsGroup(new byte[] {1, 2, 3, 4, 5, 0, 0, 0, 0, 0, 0, 0, 1}));
    assertTrue(Snapshots.cutsGroup(Codec.drawerKey(0x8000_0000_0000_0001L, 0)));
  }

  @Test
  void aRunsSnapshotNamesAreItsOwnAndValid() {
    Path work = new Path("hdfs://nn:8020/tmp/c/work");
    assertEquals(Snapshots.name("ns:t_drawers", work), Snapshots.name("ns:t_drawers", work));
    assertNotEquals(Snapshots.name("t_drawers", work), Snapshots.name("t_drawers", new Path("/other/work")));
    assertTrue(Snapshots.name("ns:t_drawers", work).matches("[a-zA-Z_0-9.-]+"));
  }
}
