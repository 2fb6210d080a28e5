package io.simhashindex.hfile;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.PriorityQueue;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapreduce.Mapper;
import org.apache.hadoop.mapreduce.Reducer;
import org.apache.hadoop.mapreduce.lib.output.MultipleOutputs;

/**
 * Clusters, steps 5 and 6: documents get their cluster.  Assign (5) meets each member fingerprint's
 * documents with its component's root (a root, or a fingerprint with documents but no pair, is its own);
 * label (6) sorts the documents by root and then as {@link RootDoc} says, so each root's first document is
 * the one the cluster keeps ({@link Keep}; by default its smallest id): its cluster id.  Both hold one
 * record at a time.
 */
final class LabelJob {
  static final String SIZES = "sizes";
  static final String LARGEST = "largest";

  private LabelJob() {}

  /** A star edge (leaf, root) from the last small-star round: the leaf's root. */
  static final class Roots extends Mapper<LongWritable, LongWritable, LongWritable, Node> {
    @Override
    protected void map(LongWritable leaf, LongWritable root, Context context)
        throws IOException, InterruptedException {
      context.write(leaf, Node.root(root.get()));
    }
  }

  static final class Assign extends Reducer<LongWritable, Node, RootDoc, LongWritable> {
    @Override
    protected void reduce(LongWritable fp, Iterable<Node> nodes, Context context)
        throws IOException, InterruptedException {
      long root = fp.get();
      byte[][] docs = null;
      long[] ranks = null;
      for (Node node : nodes) {
        if (node.kind == Node.ROOT) {
          root = node.fp;
        } else if (node.kind == Node.DOCS) {
          docs = node.docs;
          ranks = node.ranks;
        }
      }
      if (docs == null) {
        throw new IOException(String.format("fingerprint %016x is in a component but not a member", fp.get()));
      }
      for (int i = 0; i < docs.length; i++) {
        if (ranks != null) {
          context.write(RootDoc.candidate(root, ranks[i], docs[i]), fp);
        }
        context.write(new RootDoc(root, docs[i]), fp);
      }
    }
  }

  /** doc id, tab, cluster id; with each cluster's size to {@code sizes}, and the largest to {@code largest}. */
  static final class Label extends Reducer<RootDoc, LongWritable, Text, Text> {
    private MultipleOutputs<Text, Text> sides;
    private final PriorityQueue<Object[]> largest =
        new PriorityQueue<>((x, y) -> Long.compare((Long) x[1], (Long) y[1]));

    @Override
    protected void setup(Context context) {
      sides = new MultipleOutputs<>(context);
    }

    @Override
    protected void reduce(RootDoc key, Iterable<LongWritable> fps, Context context)
        throws IOException, InterruptedException {
      Text cluster = null; // the kept document
      Text first = null; // the first member: written once a second one shows there is a cluster
      byte[] last = null;
      long size = 0;
      for (LongWritable ignored : fps) { // the key moves along with the values: (root, part, rank, doc) in order
        if (key.part == RootDoc.CANDIDATE) {
          if (cluster == null) {
            cluster = new Text(escape(key.doc));
          }
          continue;
        }
        if (last != null && java.util.Arrays.equals(last, key.doc)) {
          context.getCounter(PairsJob.COUNTERS, "documents at two fingerprints").increment(1);
          continue;
        }
        last = key.doc.clone();
        Text doc = new Text(escape(key.doc));
        if (first == null) {
          first = doc;
          if (cluster == null) {
            cluster = doc;
          }
        } else {
          if (size == 1) {
            context.write(first, cluster);
          }
          context.write(doc, cluster);
        }
        size++;
      }
      if (size < 2) {
        // A member whose only pairs lost their other end (a fingerprint without documents): alone after all.
        context.getCounter(PairsJob.COUNTERS, "documents alone after the join").increment(size);
        return;
      }
      context.getCounter(PairsJob.COUNTERS, "clusters").increment(1);
      context.getCounter(PairsJob.COUNTERS, "clustered documents").increment(size);
      context.getCounter(PairsJob.COUNTERS, "clusters of " + bucket(size)).increment(1);
      sides.write(SIZES, cluster, new Text(Long.toString(size)), SIZES + "/part");
      largest.add(new Object[] {cluster.toString(), size});
      if (largest.size() > PairsJob.KEPT_LARGEST) {
        largest.poll();
      }
    }

    @Override
    protected void cleanup(Context context) throws IOException, InterruptedException {
      for (Object[] entry : largest) {
        sides.write(LARGEST, new Text((String) entry[0]), new Text(Long.toString((Long) entry[1])),
            LARGEST + "/part");
      }
      sides.close();
    }
  }

  /** Size buckets of the summary: 1, 2, 3-4, 5-8, ... */
  static String bucket(long size) {
    if (size <= 2) {
      return Long.toString(size);
    }
    long high = Long.highestOneBit(size - 1) << 1;
    return (high / 2 + 1) + "-" + high;
  }

  /** A document id as text: UTF-8, with backslash, tab, newline and carriage return escaped. */
  static String escape(byte[] doc) {
    String id = new String(doc, StandardCharsets.UTF_8);
    if (id.indexOf('\\') < 0 && id.indexOf('\t') < 0 && id.indexOf('\n') < 0 && id.indexOf('\r') < 0) {
      return id;
    }
    return id.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r");
  }
}
