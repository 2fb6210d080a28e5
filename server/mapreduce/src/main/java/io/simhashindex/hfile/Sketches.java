package io.simhashindex.hfile;

/**
 * The verification sketches stored in fp2docs cells, compared as simhash_server/fingerprint/sketch.py
 * compares them: one format byte, for format 3 the document's distinct shingles (4 bytes, big-endian), then
 * bins of b bits packed low bits first; the Jaccard estimate removes the 2^-b chance agreement of unrelated
 * bins, and formats 3 and 4 turn it into containment with the two counts.  Format 4 is format 3 followed by
 * the fingerprints of the text's parts (a count byte, then 8 bytes each, big-endian), which {@link #parts}
 * reads.  Sketches of different or unknown formats are not comparable.
 */
final class Sketches {
  // code -> {bins, bits, header bytes, 1 if the parts follow the bins}
  private static final int[][] FORMATS = {null, {256, 8, 1, 0}, {2048, 2, 1, 0}, {2048, 2, 5, 0}, {2048, 2, 5, 1}};

  private Sketches() {}

  private static int[] format(byte[] sketch) {
    if (sketch == null || sketch.length == 0) {
      return null;
    }
    int code = sketch[0] & 0xff;
    if (code >= FORMATS.length || FORMATS[code] == null) {
      return null;
    }
    int[] form = FORMATS[code];
    int size = end(form);
    if (form[3] == 0) {
      return sketch.length == size ? form : null;
    }
    return sketch.length > size && sketch.length == size + 1 + 8 * (sketch[size] & 0xff) ? form : null;
  }

  /** Where the bins end: the header and the bins, before any parts. */
  private static int end(int[] form) {
    return form[2] + form[0] * form[1] / 8;
  }

  /** The part fingerprints a format 4 sketch carries, in order; none for another format or a bad sketch. */
  static long[] parts(byte[] sketch) {
    int[] form = format(sketch);
    if (form == null || form[3] == 0) {
      return new long[0];
    }
    int from = end(form) + 1;
    long[] parts = new long[(sketch.length - from) / 8];
    for (int i = 0; i < parts.length; i++) {
      long value = 0;
      for (int k = 0; k < 8; k++) {
        value = (value << 8) | (sketch[from + 8 * i + k] & 0xffL);
      }
      parts[i] = value;
    }
    return parts;
  }

  static boolean comparable(byte[] a, byte[] b) {
    int[] form = format(a);
    return form != null && format(b) == form; // one array per format code
  }

  /** sketch.py's similarity(): the estimated Jaccard similarity, or for formats 3 and 4 containment. */
  static double similarity(byte[] a, byte[] b) {
    int[] form = format(a);
    double j = jaccard(a, b, form);
    if (form[2] == 1) {
      return j;
    }
    return containment(j, count(a), count(b));
  }

  /** The distinct shingles a format 3 or 4 sketch was made of; -1 for a sketch that does not count them. */
  static long shingles(byte[] sketch) {
    int[] form = format(sketch);
    return form == null || form[2] == 1 ? -1 : count(sketch);
  }

  private static long count(byte[] sketch) {
    return ((sketch[1] & 0xffL) << 24) | ((sketch[2] & 0xffL) << 16) | ((sketch[3] & 0xffL) << 8) | (sketch[4] & 0xffL);
  }

  /** sketch.py's containment(): the share of the smaller set in the larger, scaled down by twice their ratio
   *  where the smaller is under half the larger. */
  static double containment(double j, long a, long b) {
    long small = Math.min(a, b);
    long large = Math.max(a, b);
    if (small == 0) {
      return large == 0 ? 1.0 : 0.0;
    }
    double shared = j * (a + b) / (1 + j);
    return Math.min(1.0, shared / small) * Math.min(1.0, 2.0 * small / large);
  }

  private static double jaccard(byte[] a, byte[] b, int[] form) {
    int bits = form[1];
    int mask = (1 << bits) - 1;
    int agree = 0;
    for (int i = form[2]; i < end(form); i++) {
      int x = a[i] & 0xff;
      int y = b[i] & 0xff;
      for (int k = 0; k < 8; k += bits) {
        if (((x >>> k) & mask) == ((y >>> k) & mask)) {
          agree++;
        }
      }
    }
    double chance = Math.pow(2.0, -bits);
    return Math.max(0.0, (agree / (double) form[0] - chance) / (1 - chance));
  }
}
