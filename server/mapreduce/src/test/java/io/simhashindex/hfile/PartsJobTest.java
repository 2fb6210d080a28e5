package io.simhashindex.hfile;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.apache.hadoop.io.ByteWritable;
import org.junit.jupiter.api.Test;

/** The parts step's rule: which (owner, fingerprint) pairs a document's part adds, each once. */
class PartsJobTest {
  private static final int MAX = 8;

  /** Every pair the part of {@code owner} adds against {@code fp}, over all 10 drawers of the part. */
  private static List<long[]> added(long part, long owner, long fp) throws Exception {
    List<long[]> out = new ArrayList<>();
    ByteWritable distance = new ByteWritable();
    for (int flag = 0; flag < Codec.drawers(); flag++) {
      long prefix = PartsJob.prefix(Codec.drawerKey(part, flag));
      if (prefix != PartsJob.prefix(Codec.drawerKey(fp, flag))) {
        continue; // fp's row is not in this prefix group: the reducer never sees the two together
      }
      PartsJob.pair(part, owner, fp, (int) (prefix & 0xff), MAX, distance,
          (pair, d) -> out.add(new long[] {pair.a, pair.b, d.get()}));
    }
    return out;
  }

  private static long flip(long x, SplittableRandom random, int bits) {
    for (int i = 0; i < bits; i++) {
      x ^= 1L << random.nextInt(64);
    }
    return x;
  }

  @Test
  void aPartNearAFingerprintTheDrawersDoNotPairAddsItOnceAtTheOwnersDistance() throws Exception {
    SplittableRandom random = new SplittableRandom(3);
    int added = 0;
    for (int n = 0; n < 2000; n++) {
      long owner = random.nextLong();
      long part = random.nextLong();
      long fp = flip(part, random, random.nextInt(10));
      List<long[]> got = added(part, owner, fp);
      long reach = part ^ fp;
      long xor = owner ^ fp;
      boolean drawersPair = Long.bitCount(xor) <= MAX && Codec.lowestSharedDrawer(xor) >= 0;
      boolean partReaches = Long.bitCount(reach) <= MAX && Codec.lowestSharedDrawer(reach) >= 0;
      if (!partReaches || drawersPair) {
        assertEquals(0, got.size());
        continue;
      }
      assertEquals(1, got.size()); // once, though the part and fp may share several drawers
      FpPair want = FpPair.of(owner, fp);
      assertArrayEquals(new long[] {want.a, want.b, Long.bitCount(xor)}, got.get(0));
      added++;
    }
    assertTrue(added > 100, "too few parts reached a fingerprint: " + added);
  }

  @Test
  void aPartNeverPairsItsOwnFingerprintAndDuplicatePeersAreKeptOnce() throws Exception {
    long owner = 0x0123456789abcdefL;
    assertEquals(0, added(owner ^ 1, owner, owner).size());
    long[] peers = {5, 7, 5, 9, 7, 5};
    byte[] distances = {1, 2, 1, 3, 2, 1};
    assertEquals(3, JoinJob.Meet.distinct(peers, distances, peers.length));
    assertArrayEquals(new long[] {5, 7, 9}, java.util.Arrays.copyOf(peers, 3));
    assertArrayEquals(new byte[] {1, 2, 3}, java.util.Arrays.copyOf(distances, 3));
    long[] many = new long[100];
    byte[] far = new byte[100];
    for (int i = 0; i < many.length; i++) {
      many[i] = i % 40;
      far[i] = (byte) (i % 40);
    }
    assertEquals(40, JoinJob.Meet.distinct(many, far, many.length)); // past 32 peers, by a hash set
    for (int i = 0; i < 40; i++) {
      assertEquals(i, many[i]);
      assertEquals(i, far[i]);
    }
  }

  @Test
  void inAHotGroupEachFingerprintMeetsEachPartInExactlyOneTileOfItsPrefix() throws Exception {
    SplittableRandom random = new SplittableRandom(5);
    long prefix = 0x12345678_03L; // drawer value and flag 3
    for (long n : new long[] {1, 2, 7, PartsJob.MAX_BLOCKS}) {
      for (int trial = 0; trial < 20; trial++) {
        long fp = random.nextLong();
        long part = random.nextLong();
        java.util.Set<Long> fpTiles = groups(prefix, n, PartsJob.block(fp, n), true);
        java.util.Set<Long> partTiles = groups(prefix, n, PartsJob.block(part, n), false);
        assertEquals(n, fpTiles.size());
        assertEquals(n, partTiles.size());
        fpTiles.retainAll(partTiles);
        assertEquals(1, fpTiles.size()); // one reduce call compares the two
        long tile = fpTiles.iterator().next();
        assertEquals(prefix, tile & 0xFF_FFFF_FFFFL); // the prefix, and so the flag, below the tile number
        assertTrue(tile >>> 40 >= 1 && tile >>> 40 <= n * n);
      }
    }
    assertEquals(java.util.Collections.singleton(prefix), groups(prefix, 0, 0, true)); // a group not hot
    long[] sizes = new long[7];
    for (int i = 0; i < 70_000; i++) {
      sizes[(int) PartsJob.block(i * 0x10000L, 7)]++; // fingerprints alike in their low bits still spread
    }
    for (long size : sizes) {
      assertTrue(size > 9_000 && size < 11_000, java.util.Arrays.toString(sizes));
    }
  }

  @Test
  void aPartValueManyDocumentsShareIsComparedOnceAndPairsEveryOwner() throws Exception {
    SplittableRandom random = new SplittableRandom(7);
    long prefix = PartsJob.prefix(Codec.drawerKey(random.nextLong(), 0));
    int flag = (int) (prefix & 0xff);
    for (int[] sizes : new int[][] {{10, 3000}, {PartsJob.Meeting.REMEMBER_FROM, 3000}, {300, 3000}, {300, 15_000}}) {
      int fingerprints = sizes[0];
      long[] wholes = new long[fingerprints];
      for (int i = 0; i < fingerprints; i++) { // in drawer 0's prefix: its first two segments kept
        wholes[i] = (prefix >>> 8) << 38 | random.nextLong() >>> 26;
      }
      long shared = wholes[0] ^ 0b101; // reaches wholes[0] at least
      List<long[]> parts = new ArrayList<>();
      for (int n = 0; n < sizes[1]; n++) { // a boilerplate part of 2 in 3 documents among parts of their own
        long own = flip(wholes[random.nextInt(fingerprints)], random, random.nextInt(6)) & ~(-1L << 38)
            | wholes[0] & (-1L << 38);
        parts.add(new long[] {n % 3 == 2 ? own : shared, random.nextLong()});
      }
      PartsJob.Meeting meeting = new PartsJob.Meeting(flag, MAX);
      for (long fp : wholes) {
        meeting.hold(fp);
      }
      List<List<Long>> got = new ArrayList<>();
      List<List<Long>> want = new ArrayList<>();
      ByteWritable distance = new ByteWritable();
      for (long[] part : parts) {
        meeting.meet(part[0], part[1], distance,
            (pair, d) -> got.add(java.util.Arrays.asList(pair.a, pair.b, (long) d.get())));
        for (long fp : wholes) {
          PartsJob.pair(part[0], part[1], fp, flag, MAX, distance,
              (pair, d) -> want.add(java.util.Arrays.asList(pair.a, pair.b, (long) d.get())));
        }
      }
      assertTrue(want.equals(got), () -> got.size() + " pairs, not the " + want.size() + " of each part alone");
      assertTrue(got.size() >= 2000, "the shared part reached no fingerprint: " + got.size());
      assertEquals(want.size(), meeting.found);
      long distinct = parts.stream().mapToLong(p -> p[0]).distinct().count();
      if (fingerprints < PartsJob.Meeting.REMEMBER_FROM) {
        assertEquals((long) parts.size() * fingerprints, meeting.compared);
      } else if (distinct <= PartsJob.Meeting.REMEMBERED) {
        assertEquals(distinct * fingerprints, meeting.compared); // each value once
      } else { // forgotten past REMEMBERED values, and compared again when met again
        assertTrue(meeting.compared > distinct * fingerprints && meeting.compared < parts.size() * fingerprints / 2);
      }
    }
  }

  private static java.util.Set<Long> groups(long prefix, long n, long own, boolean fingerprint) throws Exception {
    java.util.Set<Long> out = new java.util.HashSet<>();
    PartsJob.toGroups(prefix, n, own, fingerprint, new GroupKey(), new FpPair(1, 2),
        (key, value) -> out.add(key.group));
    return out;
  }
}
