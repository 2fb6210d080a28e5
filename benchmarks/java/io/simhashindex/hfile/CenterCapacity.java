package io.simhashindex.hfile;

/**
 * One component of N documents through the centres step's {@link Center} in this JVM's heap: each document
 * linked to an earlier one drawn at random (N - 1 links, so past 4 million the merge is skipped, as in the
 * job).  Prints "documents links merged seconds usedMB"; bench_centres.py runs it at several heaps and sizes.
 */
public final class CenterCapacity {
  private CenterCapacity() {}

  public static void main(String[] args) {
    int documents = Integer.parseInt(args[0]);
    java.util.SplittableRandom random = new java.util.SplittableRandom(1);
    long began = System.nanoTime();
    Center center = new Center();
    for (int i = 1; i < documents; i++) {
      long a = mix(i);
      long b = mix(random.nextInt(i));
      center.add(Math.min(a, b), Math.max(a, b));
    }
    boolean merged = center.merge();
    double seconds = (System.nanoTime() - began) / 1e9;
    Runtime runtime = Runtime.getRuntime();
    System.gc();
    System.out.printf("%d %d %b %.2f %d%n", center.documents(), documents - 1L, merged, seconds,
        (runtime.totalMemory() - runtime.freeMemory()) >> 20);
  }

  /** A document's fingerprint: distinct, and spread as real ones are. */
  private static long mix(long x) {
    long z = (x + 1) * 0x9E3779B97F4A7C15L;
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }
}
