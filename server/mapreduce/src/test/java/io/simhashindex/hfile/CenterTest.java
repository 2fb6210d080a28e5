package io.simhashindex.hfile;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Star clusters over one component: CENTER's stars, and the merge of stars that vouch for each other. */
class CenterTest {
  /** Two pairs that make two stars, then links across by which 1 and 3 each reach all of the other star. */
  private static final long[][] TWO_PAIRS = {{1, 2}, {3, 4}, {1, 3}, {1, 4}, {2, 3}};

  /** node -> its centre, for the documents in a star. */
  private static Map<Long, Long> stars(Center center) {
    Map<Long, Long> out = new HashMap<>();
    for (int i = 0; i < center.documents(); i++) {
      if (center.centreOf(i) >= 0) {
        out.put(center.node(i), center.node(center.centreOf(i)));
      }
    }
    return out;
  }

  /** The expected stars, as node, centre, node, centre... */
  private static Map<Long, Long> starsOf(long... nodeThenCentre) {
    Map<Long, Long> out = new HashMap<>();
    for (int i = 0; i < nodeThenCentre.length; i += 2) {
      out.put(nodeThenCentre[i], nodeThenCentre[i + 1]);
    }
    return out;
  }

  private static Center of(int mergeLinks, long[][] links) {
    Center center = new Center(mergeLinks);
    for (long[] link : links) {
      center.add(link[0], link[1]);
    }
    return center;
  }

  @Test
  void centerMakesStarsAndLeavesADocumentLinkedOnlyToAMemberOut() {
    // (1,2) makes 1 a centre; 3 joins it; (2,4): 2 is a member, so 4 stays out.
    Center center = of(100, new long[][] {{1, 2}, {1, 3}, {2, 4}});
    assertTrue(center.merge());
    assertEquals(starsOf(1, 1, 2, 1, 3, 1), stars(center));
    assertEquals(4, center.documents());
  }

  @Test
  void starsMergeWhenEachCentreIsLinkedToEveryMemberOfTheOther() {
    // Two pairs pair off first: stars {1,2} and {3,4}; then 1 and 3 are linked to every member of the other.
    Center center = of(100, TWO_PAIRS);
    assertTrue(center.merge());
    assertEquals(starsOf(1, 1, 2, 1, 3, 1, 4, 1), stars(center));
  }

  @Test
  void starsStayApartWhenOneCentreMissesAMemberOfTheOther() {
    // 3 is linked to 1 but not to 2, a member of 1's star: no merge, though 1 reaches all of 3's star.
    long[][] links = {{1, 2}, {3, 4}, {1, 3}, {1, 4}};
    Center center = of(100, links);
    assertTrue(center.merge());
    assertEquals(starsOf(1, 1, 2, 1, 3, 3, 4, 3), stars(center));
  }

  @Test
  void aComponentOverTheLimitKeepsCentersStars() {
    Center center = of(4, TWO_PAIRS);
    assertFalse(center.merge());
    assertEquals(starsOf(1, 1, 2, 1, 3, 3, 4, 3), stars(center));
    assertThrows(IllegalArgumentException.class, () -> new Center(-1));
  }
}
