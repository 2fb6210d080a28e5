package io.simhashindex.hfile;

import java.util.SplittableRandom;
import org.apache.hadoop.io.ByteWritable;

/**
 * One reduce call of the `clusters` parts step: F fingerprints of one drawer-0 prefix held, then D documents'
 * parts met, a share of them one part value that many documents share (a boilerplate page's).  Times the
 * job's {@link PartsJob.Meeting} ("meeting") or comparing each part with every fingerprint ("each",
 * {@link PartsJob#pair}).  Prints "seconds compared pairs", the best of its rounds; bench_parts_step.py
 * runs it in fresh JVMs, the two ways in turns.  Arguments: F D shared-share rounds meeting|each.
 */
public final class PartsMeetingCost {
  private PartsMeetingCost() {}

  public static void main(String[] args) throws Exception {
    int fingerprints = Integer.parseInt(args[0]);
    int documents = Integer.parseInt(args[1]);
    double share = Double.parseDouble(args[2]);
    int rounds = Integer.parseInt(args[3]);
    boolean meeting = args[4].equals("meeting");
    SplittableRandom random = new SplittableRandom(7);
    long prefix = random.nextLong() >>> 38 << 38; // drawer 0's first two segments
    long[] wholes = new long[fingerprints];
    for (int i = 0; i < fingerprints; i++) {
      wholes[i] = prefix | random.nextLong() >>> 26;
    }
    long shared = wholes[0] ^ 0b101;
    long[] parts = new long[documents];
    long[] owners = new long[documents];
    for (int n = 0; n < documents; n++) {
      long near = wholes[random.nextInt(fingerprints)] ^ 1L << random.nextInt(38); // one bit from a fingerprint
      parts[n] = random.nextDouble() < share ? shared : prefix | near & ~(-1L << 38);
      owners[n] = random.nextLong();
    }
    ByteWritable distance = new ByteWritable();
    long[] written = new long[1];
    PairsJob.TaskInputOutput<FpPair, ByteWritable> out = (pair, d) -> written[0]++;
    double best = Double.MAX_VALUE;
    long compared = 0;
    for (int round = 0; round < rounds; round++) { // the first rounds warm the JIT up; the best is printed
      written[0] = 0;
      long began = System.nanoTime();
      if (meeting) {
        PartsJob.Meeting call = new PartsJob.Meeting(0, 8);
        for (long fp : wholes) {
          call.hold(fp);
        }
        for (int n = 0; n < documents; n++) {
          call.meet(parts[n], owners[n], distance, out);
        }
        compared = call.compared;
      } else {
        for (int n = 0; n < documents; n++) {
          for (long fp : wholes) {
            PartsJob.pair(parts[n], owners[n], fp, 0, 8, distance, out);
          }
        }
        compared = (long) documents * fingerprints;
      }
      best = Math.min(best, (System.nanoTime() - began) / 1e9);
    }
    System.out.printf("%.5f %d %d%n", best, compared, written[0]);
  }
}
