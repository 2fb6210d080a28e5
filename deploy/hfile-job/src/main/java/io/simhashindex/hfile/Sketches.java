package io.simhashindex.hfile;

/**
 * The verification sketches stored in fp2docs cells, compared as simhash_server/fingerprint/sketch.py
 * compares them: one format byte, then bins of b bits packed low bits first; the estimate removes the
 * 2^-b chance agreement of unrelated bins.  Sketches of different or unknown formats are not comparable.
 */
final class Sketches {
  private static final int[][] FORMATS = {null, {256, 8}, {2048, 2}}; // code -> {bins, bits}

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
    return sketch.length == 1 + form[0] * form[1] / 8 ? form : null;
  }

  static boolean comparable(byte[] a, byte[] b) {
    int[] form = format(a);
    return form != null && format(b) == form; // one array per format code
  }

  /** Estimated Jaccard similarity of two comparable sketches, as sketch.py's similarity(). */
  static double similarity(byte[] a, byte[] b) {
    int[] form = format(a);
    int bits = form[1];
    int mask = (1 << bits) - 1;
    int agree = 0;
    for (int i = 1; i < a.length; i++) {
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
