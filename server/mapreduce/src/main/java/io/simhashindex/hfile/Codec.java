package io.simhashindex.hfile;

import java.nio.charset.StandardCharsets;

/**
 * Row keys and cells of the index, as simhash_server/index/keys.py and writes.py define them. A unit test
 * (GoldenTest) and tests/unit/test_golden_codec.py hold both to tests/golden/drawer-keys.tsv.
 */
final class Codec {
  static final int[] SEGMENTS = {13, 13, 13, 13, 12};
  static final byte[] FAMILY = {'d'};
  static final int PREFIX = 5; // drawer value (4) + flag (1): the rows a query scans together
  static final int KEY = 13; // + the fingerprint (8)
  static final int PART_FLAGS = 10; // a part row's flag is its drawer's + 10 (recipe v7)
  static final int PART_KEY = KEY + 8; // + the document's fingerprint (8)
  static final byte[] DRAWER_QUALIFIER = new byte[0];
  static final byte[] EMPTY = new byte[0];
  static final byte[] FP_QUALIFIER = "fp".getBytes(StandardCharsets.UTF_8);

  private static final int[][] PAIRS;
  private static final int[] SHIFTS = new int[SEGMENTS.length];

  static {
    int pairs = SEGMENTS.length * (SEGMENTS.length - 1) / 2;
    PAIRS = new int[pairs][];
    int n = 0;
    for (int i = 0; i < SEGMENTS.length; i++) {
      for (int j = i + 1; j < SEGMENTS.length; j++) {
        PAIRS[n++] = new int[] {i, j};
      }
    }
    int used = 0;
    for (int i = 0; i < SEGMENTS.length; i++) {
      used += SEGMENTS[i];
      SHIFTS[i] = 64 - used;
    }
  }

  private Codec() {}

  static int drawers() {
    return PAIRS.length;
  }

  /** The 13-byte drawer row key of {@code fp} for drawer {@code flag}: drawer value (4), flag (1), fp (8). */
  static byte[] drawerKey(long fp, int flag) {
    int i = PAIRS[flag][0];
    int j = PAIRS[flag][1];
    long segI = segment(fp, i);
    long segJ = segment(fp, j);
    long value = ((segI << SEGMENTS[j]) | segJ) << (32 - SEGMENTS[i] - SEGMENTS[j]);
    byte[] key = new byte[13];
    for (int b = 0; b < 4; b++) {
      key[b] = (byte) (value >>> (24 - 8 * b));
    }
    key[4] = (byte) flag;
    putLong(key, 5, fp);
    return key;
  }

  /**
   * The 21-byte part row key (recipe v7) leading from a document's first stored part {@code part} to its
   * fingerprint {@code whole}, for drawer {@code flag}: the part's drawer key with flag + 10, then whole (8).
   */
  static byte[] partRowKey(long part, long whole, int flag) {
    byte[] key = java.util.Arrays.copyOf(drawerKey(part, flag), PART_KEY);
    key[4] = (byte) (flag + PART_FLAGS);
    putLong(key, KEY, whole);
    return key;
  }

  /** Whether a drawers table row is a part row (recipe v7), which the clusters job leaves alone. */
  static boolean isPartRow(byte[] row, int offset, int length) {
    return length == PART_KEY && (row[offset + PREFIX - 1] & 0xff) >= PART_FLAGS;
  }

  /**
   * The lowest flag of the drawers two fingerprints share, given their XOR (-1 if none): the one drawer in
   * which the clusters job reports their pair, so that a pair sharing several drawers is reported once.
   */
  static int lowestSharedDrawer(long xor) {
    for (int flag = 0; flag < PAIRS.length; flag++) {
      if (segment(xor, PAIRS[flag][0]) == 0 && segment(xor, PAIRS[flag][1]) == 0) {
        return flag;
      }
    }
    return -1;
  }

  private static long segment(long fp, int i) {
    return (fp >>> SHIFTS[i]) & ((1L << SEGMENTS[i]) - 1);
  }

  /** The fp2docs row key of a fingerprint (and the docs record's value): 8 bytes, big-endian. */
  static byte[] fingerprintRow(long fp) {
    byte[] row = new byte[8];
    putLong(row, 0, fp);
    return row;
  }

  static long fingerprintOf(byte[] row) {
    if (row.length != 8) {
      throw new IllegalArgumentException("a fingerprint cell is 8 bytes, got " + row.length);
    }
    long fp = 0;
    for (byte b : row) {
      fp = (fp << 8) | (b & 0xff);
    }
    return fp;
  }

  private static void putLong(byte[] into, int at, long v) {
    for (int b = 0; b < 8; b++) {
      into[at + b] = (byte) (v >>> (56 - 8 * b));
    }
  }
}
