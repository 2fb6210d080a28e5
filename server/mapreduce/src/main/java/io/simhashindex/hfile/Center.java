package io.simhashindex.hfile;

import java.util.Arrays;
import org.agrona.collections.Int2ObjectHashMap;
import org.agrona.collections.IntArrayList;
import org.agrona.collections.Long2LongHashMap;

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
 * CENTER's stars, so that one reducer's memory stays bounded.  CENTER itself holds every document of the
 * component, so they are kept in primitive arrays and an open-addressing map (Agrona's, which HBase's server
 * jars bring): about 55 bytes of heap a document where boxed collections took 100, which is what decides the
 * largest component a reducer's heap can star (docs/decisions.md).
 */
final class Center {
  /** How many links of one component the merge holds at most (16 bytes each while it merges). */
  static final int MERGE_LINKS = 4_000_000;

  private final int mergeLinks;
  private final Long2LongHashMap local = new Long2LongHashMap(1024, 0.9f, -1); // node -> its index here
  private long[] nodes = new long[16]; // by index: the node
  private int[] centre = new int[16]; // by index: its centre's index; a centre's is its own; -1: in no star
  private int count;
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
    Int2ObjectHashMap<IntArrayList> members = new Int2ObjectHashMap<>();
    for (int i = 0; i < count; i++) {
      if (centre[i] >= 0) {
        members.computeIfAbsent(centre[i], k -> new IntArrayList()).addInt(i);
      }
    }
    for (int n = 0; n < links; n++) {
      int a = (int) (order[n] >>> 32);
      int b = (int) order[n];
      if (centre[a] != a || centre[b] != b) {
        continue; // a merge is of two stars, through their centres
      }
      IntArrayList ours = members.get(a);
      IntArrayList theirs = members.get(b);
      if (linkedToAll(linked, a, theirs) && linkedToAll(linked, b, ours)) {
        for (int k = 0; k < theirs.size(); k++) {
          int m = theirs.getInt(k);
          centre[m] = a;
          ours.addInt(m);
        }
        members.remove(b);
      }
    }
    return true;
  }

  /** How many documents the links named; each has an index below it. */
  int documents() {
    return count;
  }

  /** The document of an index. */
  long node(int i) {
    return nodes[i];
  }

  /** The index of the document's centre (its own, for a centre), or -1 when it is in no star. */
  int centreOf(int i) {
    return centre[i];
  }

  private static boolean linkedToAll(long[] linked, int c, IntArrayList star) {
    for (int k = 0; k < star.size(); k++) {
      if (Arrays.binarySearch(linked, key(c, star.getInt(k))) < 0) {
        return false;
      }
    }
    return true;
  }

  private int index(long node) {
    long known = local.get(node);
    if (known >= 0) {
      return (int) known;
    }
    int i = count++;
    local.put(node, i);
    if (i == centre.length) {
      centre = Arrays.copyOf(centre, 2 * i);
      nodes = Arrays.copyOf(nodes, 2 * i);
    }
    nodes[i] = node;
    centre[i] = -1;
    return i;
  }

  private static long key(int x, int y) {
    return ((long) Math.min(x, y) << 32) | Math.max(x, y);
  }
}
