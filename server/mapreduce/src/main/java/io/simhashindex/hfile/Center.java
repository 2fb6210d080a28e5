package io.simhashindex.hfile;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Star clusters over one component's verified links: CENTER, then stars merged that vouch for each other.
 *
 * <p>CENTER (Haveliwala, Gionis and Indyk, "Scalable techniques for clustering the web", WebDB 2000): the
 * links come from the most similar down; a link between two documents in no star makes its first end (the
 * smaller id) a centre and the other its member, and a document later linked to a centre joins it.  A
 * document linked only to members stays in no star.
 *
 * <p>CENTER splits one article's copies into several stars whenever two of them paired off before a link
 * to the first centre came.  So the stars are then merged, taking the links between two centres in the same
 * order: the first end's star takes in the other's when each centre is linked to every member of the other
 * star.  Every member is still linked to its centre itself, never through a chain.
 *
 * <p>The merge needs the component's links at hand; a component of more than {@code mergeLinks} links keeps
 * CENTER's stars, so that one reducer's memory stays bounded.
 */
final class Center {
  /** How many links of one component the merge holds at most (16 bytes each while it merges). */
  static final int MERGE_LINKS = 4_000_000;

  private final int mergeLinks;
  private final Map<Long, Integer> local = new HashMap<>(); // node -> its index here
  private final List<Long> nodes = new ArrayList<>();
  private int[] centre = new int[16]; // by index: its centre's index; a centre's is its own; -1: in no star
  private long[] order = new long[16]; // the links as given: first end's index << 32 | second's
  private int links;
  private boolean tooMany;

  Center() {
    this(MERGE_LINKS);
  }

  Center(int mergeLinks) {
    if (mergeLinks < 0) {
      throw new IllegalArgumentException("mergeLinks must be >= 0, not " + mergeLinks);
    }
    this.mergeLinks = mergeLinks;
  }

  /** The next link, in CENTER's order, {@code a} being the end with the smaller id. */
  void add(long a, long b) {
    int x = index(a);
    int y = index(b);
    int cx = centre[x];
    int cy = centre[y];
    if (cx < 0 && cy < 0) {
      centre[x] = x;
      centre[y] = x;
    } else if (cy < 0 && cx == x) {
      centre[y] = x;
    } else if (cx < 0 && cy == y) {
      centre[x] = y;
    }
    if (tooMany) {
      return;
    }
    if (links == mergeLinks) {
      tooMany = true;
      order = new long[0];
      return;
    }
    if (links == order.length) {
      order = Arrays.copyOf(order, 2 * links);
    }
    order[links++] = ((long) x << 32) | y;
  }

  /**
   * Merge the stars that vouch for each other, taking the links between centres in the order given; false,
   * and CENTER's stars kept, when the component had more links than the merge holds.
   */
  boolean merge() {
    if (tooMany) {
      return false;
    }
    long[] linked = new long[links]; // either way round, sorted: a binary search finds a link
    for (int n = 0; n < links; n++) {
      linked[n] = key((int) (order[n] >>> 32), (int) order[n]);
    }
    Arrays.sort(linked);
    Map<Integer, List<Integer>> members = new HashMap<>();
    for (int i = 0; i < nodes.size(); i++) {
      if (centre[i] >= 0) {
        members.computeIfAbsent(centre[i], k -> new ArrayList<>()).add(i);
      }
    }
    for (int n = 0; n < links; n++) {
      int a = (int) (order[n] >>> 32);
      int b = (int) order[n];
      if (centre[a] != a || centre[b] != b) {
        continue; // a merge is of two stars, through their centres
      }
      List<Integer> ours = members.get(a);
      List<Integer> theirs = members.get(b);
      if (linkedToAll(linked, a, theirs) && linkedToAll(linked, b, ours)) {
        for (int m : theirs) {
          centre[m] = a;
        }
        ours.addAll(theirs);
        members.remove(b);
      }
    }
    return true;
  }

  /** How many documents the links named; each has an index below it. */
  int documents() {
    return nodes.size();
  }

  /** The document of an index. */
  long node(int i) {
    return nodes.get(i);
  }

  /** The index of the document's centre (its own, for a centre), or -1 when it is in no star. */
  int centreOf(int i) {
    return centre[i];
  }

  private static boolean linkedToAll(long[] linked, int c, List<Integer> star) {
    for (int m : star) {
      if (Arrays.binarySearch(linked, key(c, m)) < 0) {
        return false;
      }
    }
    return true;
  }

  private int index(long node) {
    Integer known = local.get(node);
    if (known != null) {
      return known;
    }
    int i = nodes.size();
    local.put(node, i);
    nodes.add(node);
    if (i == centre.length) {
      centre = Arrays.copyOf(centre, 2 * i);
    }
    centre[i] = -1;
    return i;
  }

  private static long key(int x, int y) {
    return ((long) Math.min(x, y) << 32) | Math.max(x, y);
  }
}
