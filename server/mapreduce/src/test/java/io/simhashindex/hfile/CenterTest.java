package io.simhashindex.hfile;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
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

  @Test
  void largeComponentsGetTheStarsTheRulesSay() {
    // Thousands of documents (the tables grow many times) with links among a few hundred articles, so that many
    // stars form and some merge: the same stars as the rules in the class comment give, applied naively.
    Random random = new Random(7);
    for (int round = 0; round < 5; round++) {
      int documents = 3000 + random.nextInt(3000);
      long[] ids = random.longs(documents).toArray();
      List<long[]> links = new ArrayList<>();
      for (int n = 0; n < 4 * documents; n++) {
        int a = random.nextInt(documents); // articles of 12 documents, and a tenth of the links across them
        int b = random.nextInt(10) == 0 ? random.nextInt(documents) : a / 12 * 12 + random.nextInt(12);
        b = Math.min(documents - 1, b);
        if (a != b) {
          links.add(new long[] {ids[a], ids[b]});
        }
      }
      Center center = of(Center.MERGE_LINKS, links.toArray(new long[0][]));
      assertTrue(center.merge());
      assertEquals(naiveStars(links), stars(center));
    }
  }

  /** CENTER, then the merge of stars whose centres are each linked to every member of the other, in boxes. */
  private static Map<Long, Long> naiveStars(List<long[]> links) {
    Map<Long, Long> centre = new HashMap<>();
    Set<List<Long>> linked = new HashSet<>();
    for (long[] link : links) {
      long a = link[0];
      long b = link[1];
      linked.add(Arrays.asList(Math.min(a, b), Math.max(a, b)));
      if (!centre.containsKey(a) && !centre.containsKey(b)) {
        centre.put(a, a);
        centre.put(b, a);
      } else if (!centre.containsKey(b) && isCentre(centre, a)) {
        centre.put(b, a);
      } else if (!centre.containsKey(a) && isCentre(centre, b)) {
        centre.put(a, b);
      }
    }
    for (long[] link : links) {
      long a = link[0];
      long b = link[1];
      if (!isCentre(centre, a) || !isCentre(centre, b)) {
        continue;
      }
      List<Long> ours = new ArrayList<>();
      List<Long> theirs = new ArrayList<>();
      centre.forEach((node, c) -> (c == a ? ours : c == b ? theirs : new ArrayList<Long>()).add(node));
      boolean vouch = theirs.stream().allMatch(m -> linked.contains(Arrays.asList(Math.min(a, m), Math.max(a, m))))
          && ours.stream().allMatch(m -> linked.contains(Arrays.asList(Math.min(b, m), Math.max(b, m))));
      if (vouch) {
        theirs.forEach(m -> centre.put(m, a));
      }
    }
    return centre;
  }

  private static boolean isCentre(Map<Long, Long> centre, long node) {
    Long c = centre.get(node);
    return c != null && c == node;
  }
}
