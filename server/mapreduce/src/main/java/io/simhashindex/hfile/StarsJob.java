package io.simhashindex.hfile;

import java.io.IOException;
import java.util.Arrays;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.mapreduce.Mapper;
import org.apache.hadoop.mapreduce.Reducer;

/**
 * Clusters, step 4: connected components of the edges, by alternating large-star and small-star rounds
 * (Kiveris et al., "Connected Components in MapReduce and Beyond", SoCC 2014): O(log^2 n) rounds, each a
 * MapReduce job over the edge list, with nothing held but one node's neighbours.
 *
 * <p>Nodes are fingerprints, ordered as signed longs.  Once a large-star and a small-star round both change
 * nothing, every edge links a node to the smallest node of its component (its root).
 */
final class StarsJob {
  static final String CHANGES = "edges changed";

  private StarsJob() {}

  /** Large-star: every edge both ways. */
  static final class BothWays extends Mapper<LongWritable, LongWritable, LongWritable, LongWritable> {
    @Override
    protected void map(LongWritable u, LongWritable v, Context context) throws IOException, InterruptedException {
      context.write(u, v);
      context.write(v, u);
    }
  }

  /** Large-star at u: each larger neighbour is linked to the smallest of u's neighbourhood instead of to u. */
  static final class LargeStar extends Reducer<LongWritable, LongWritable, LongWritable, LongWritable> {
    @Override
    protected void reduce(LongWritable u, Iterable<LongWritable> neighbours, Context context)
        throws IOException, InterruptedException {
      long[] near = distinct(neighbours);
      long self = u.get();
      long min = Math.min(self, near[0]);
      LongWritable root = new LongWritable(min);
      long larger = 0;
      for (long v : near) {
        if (v > self) {
          context.write(new LongWritable(v), root);
          larger++;
        }
      }
      if (min < self) {
        context.getCounter(PairsJob.COUNTERS, CHANGES).increment(larger);
      }
    }
  }

  /** Small-star: every edge to its larger end. */
  static final class ToLarger extends Mapper<LongWritable, LongWritable, LongWritable, LongWritable> {
    @Override
    protected void map(LongWritable u, LongWritable v, Context context) throws IOException, InterruptedException {
      if (u.get() > v.get()) {
        context.write(u, v);
      } else if (u.get() < v.get()) {
        context.write(v, u);
      }
    }
  }

  /** Small-star at u: u and its smaller neighbours are all linked to the smallest of them. */
  static final class SmallStar extends Reducer<LongWritable, LongWritable, LongWritable, LongWritable> {
    @Override
    protected void reduce(LongWritable u, Iterable<LongWritable> smaller, Context context)
        throws IOException, InterruptedException {
      long[] near = distinct(smaller);
      LongWritable root = new LongWritable(near[0]);
      for (int i = 1; i < near.length; i++) {
        context.write(new LongWritable(near[i]), root);
      }
      context.write(u, root);
      context.getCounter(PairsJob.COUNTERS, CHANGES).increment(near.length - 1);
    }
  }

  /** The values, sorted, once each. */
  static long[] distinct(Iterable<LongWritable> values) {
    long[] all = new long[8];
    int n = 0;
    for (LongWritable value : values) {
      if (n == all.length) {
        all = Arrays.copyOf(all, 2 * n);
      }
      all[n++] = value.get();
    }
    Arrays.sort(all, 0, n);
    int kept = 0;
    for (int i = 0; i < n; i++) {
      if (kept == 0 || all[kept - 1] != all[i]) {
        all[kept++] = all[i];
      }
    }
    return Arrays.copyOf(all, kept);
  }
}
