package io.simhashindex.hfile;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The order CENTER takes a component's links in: by root, most similar first, then by the ends' ids. */
class LinkTest {
  private static byte[] id(String id) {
    return id.getBytes(StandardCharsets.UTF_8);
  }

  private static Link link(long root, String x, String y, double similarity) {
    Link link = Link.of(x.hashCode(), id(x), y.hashCode(), id(y), similarity);
    link.root = root;
    return link;
  }

  @Test
  void theSmallerIdComesFirstWhicheverEndItWas() {
    Link link = Link.of(7, id("b"), 9, id("a"), 0.8);
    assertEquals(9, link.a);
    assertArrayEquals(id("a"), link.aId);
    assertEquals(7, link.b);
    assertEquals(8000, link.score);
  }

  @Test
  void linksAreOrderedByRootThenFromTheMostSimilarDownThenByIds() {
    List<Link> want = Arrays.asList(
        link(1, "c", "d", 0.99), link(1, "a", "z", 0.9), link(1, "b", "c", 0.9), link(1, "b", "d", 0.9),
        link(1, "a", "b", 0.75), link(2, "a", "b", 0.5));
    List<Link> got = new ArrayList<>(want);
    Collections.reverse(got);
    Collections.sort(got);
    assertEquals(want, got);
    assertEquals(Link.score(0.90004), Link.score(0.9)); // ordered at the four decimals pairs/ prints
    assertEquals(0, new Link.ByRoot().compare(want.get(0), want.get(4)));
  }
}
