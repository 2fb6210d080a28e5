package io.simhashindex.hfile;

/**
 * The verification sketches stored in fp2docs cells, compared as simhash_server/fingerprint/sketch.py
 * compares them: one format byte, for format 3 the document's distinct shingles (4 bytes, big-endian), then
 * bins of b bits packed low bits first; the Jaccard estimate removes the 2^-b chance agreement of unrelated
 * bins, and formats 3 and 4 turn it into containment with the two counts.  Format 4 is format 3 followed by
 * the fingerprints of the text's parts (a count byte, then 8 bytes each, big-endian), which {@link #parts}
 * reads.  Format 5 is format 4 followed by the text's repeated words with their contexts (renames.py: a count
 * byte, then per word its 4-byte hash, a count byte and 4 bytes per context), and two sketches whose words
 * say one text has one name put for another ({@link #renamed}) score 0.  Sketches of different or unknown
 * formats are not comparable.
 */
final class Sketches {
  // code -> {bins, bits, header bytes, 1 if the parts follow the bins, 1 if the renames follow the parts}
  private static final int[][] FORMATS = {null, {256, 8, 1, 0, 0}, {2048, 2, 1, 0, 0}, {2048, 2, 5, 0, 0},
      {2048, 2, 5, 1, 0}, {2048, 2, 5, 1, 1}};
  static final int LEAST = 3; // renames.py's: the contexts two words share that make two pages renamed

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
    int parts = partsEnd(sketch, form);
    if (form[4] == 0) {
      return sketch.length == parts ? form : null;
    }
    return parts < sketch.length && renamesEnd(sketch, parts) == sketch.length ? form : null;
  }

  /** Where the parts of a sketch of a format with parts end; past its length when it is too short. */
  private static int partsEnd(byte[] sketch, int[] form) {
    int size = end(form);
    return sketch.length > size ? size + 1 + 8 * (sketch[size] & 0xff) : sketch.length + 1;
  }

  /** Where the renames that start at {@code from} end; -1 when the bytes there are not renames. */
  private static int renamesEnd(byte[] sketch, int from) {
    int at = from + 1;
    for (int w = 0; w < (sketch[from] & 0xff); w++) {
      if (at + 5 > sketch.length) {
        return -1;
      }
      at += 5 + 4 * (sketch[at + 4] & 0xff);
    }
    return at <= sketch.length ? at : -1;
  }

  /** Where the bins end: the header and the bins, before any parts. */
  private static int end(int[] form) {
    return form[2] + form[0] * form[1] / 8;
  }

  /** The part fingerprints a format 4 or 5 sketch carries, in order; none for another format or a bad sketch. */
  static long[] parts(byte[] sketch) {
    int[] form = format(sketch);
    if (form == null || form[3] == 0) {
      return new long[0];
    }
    int from = end(form) + 1;
    long[] parts = new long[(partsEnd(sketch, form) - from) / 8];
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

  /** sketch.py's similarity(): the estimated Jaccard similarity, or for formats 3-5 containment (0 renamed). */
  static double similarity(byte[] a, byte[] b) {
    int[] form = format(a);
    double j = jaccard(a, b, form);
    if (form[2] == 1) {
      return j;
    }
    if (form[4] == 1 && renamed(renames(a, partsEnd(a, form)), renames(b, partsEnd(b, form)))) {
      return 0.0;
    }
    return containment(j, count(a), count(b));
  }

  /** A format 5 sketch's words (their hashes), each with its contexts' hashes, sorted. */
  static java.util.Map<Integer, int[]> renames(byte[] sketch, int from) {
    java.util.Map<Integer, int[]> words = new java.util.LinkedHashMap<>();
    int at = from + 1;
    for (int w = 0; w < (sketch[from] & 0xff); w++) {
      int word = int32(sketch, at);
      int[] contexts = new int[sketch[at + 4] & 0xff];
      at += 5;
      for (int c = 0; c < contexts.length; c++, at += 4) {
        contexts[c] = int32(sketch, at);
      }
      java.util.Arrays.sort(contexts);
      words.put(word, java.util.Arrays.stream(contexts).distinct().toArray()); // a set, as renames.py's
    }
    return words;
  }

  private static int int32(byte[] b, int at) {
    return (b[at] & 0xff) << 24 | (b[at + 1] & 0xff) << 16 | (b[at + 2] & 0xff) << 8 | (b[at + 3] & 0xff);
  }

  /**
   * renames.py's renamed(): whether a word x of {@code a} and another word y of {@code b} share LEAST contexts
   * that {@code a} does not have for y nor {@code b} for x.
   */
  static boolean renamed(java.util.Map<Integer, int[]> a, java.util.Map<Integer, int[]> b) {
    int[] none = new int[0];
    for (java.util.Map.Entry<Integer, int[]> x : a.entrySet()) {
      int[] xInB = b.getOrDefault(x.getKey(), none);
      for (java.util.Map.Entry<Integer, int[]> y : b.entrySet()) {
        if (y.getKey().equals(x.getKey())) {
          continue;
        }
        int[] yInA = a.getOrDefault(y.getKey(), none);
        int shared = 0;
        for (int c : x.getValue()) {
          if (java.util.Arrays.binarySearch(y.getValue(), c) >= 0 && java.util.Arrays.binarySearch(yInA, c) < 0
              && java.util.Arrays.binarySearch(xInB, c) < 0) {
            shared++;
          }
        }
        if (shared >= LEAST) {
          return true;
        }
      }
    }
    return false;
  }

  /** The distinct shingles a format 3-5 sketch was made of; -1 for a sketch that does not count them. */
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
