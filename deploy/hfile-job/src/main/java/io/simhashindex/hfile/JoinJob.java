package io.simhashindex.hfile;

import java.io.IOException;
import java.util.Arrays;
import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.CellUtil;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.io.ImmutableBytesWritable;
import org.apache.hadoop.hbase.mapreduce.TableMapper;
import org.apache.hadoop.io.ByteWritable;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapreduce.Mapper;
import org.apache.hadoop.mapreduce.Reducer;
import org.apache.hadoop.mapreduce.lib.output.MultipleOutputs;

/**
 * Clusters, steps 2 and 3: pairs meet the documents of their fingerprints (fp2docs).
 *
 * <p>The join (step 2) meets each fingerprint's fp2docs row with its pairs.  A fingerprint with no documents
 * (a drawer row whose documents were deleted) is dropped, with its pairs.  A fingerprint in a pair, or with
 * several documents, becomes a member: its documents go to {@code members}.  Each surviving pair is written
 * once from each end, and the confirm step (3) keeps the pairs written from both ends: both have documents.
 */
final class JoinJob {
  static final String MEMBERS = "members";
  static final String PAIRS = "pairs";

  private JoinJob() {}

  /** An fp2docs row: the fingerprint and its documents' ids. */
  static final class Documents extends TableMapper<LongWritable, Node> {
    @Override
    protected void map(ImmutableBytesWritable row, Result result, Context context)
        throws IOException, InterruptedException {
      if (row.getLength() != 8) {
        throw new IOException("fp2docs row of " + row.getLength() + " bytes, not 8: is this simhash-index's?");
      }
      byte[][] docs = new byte[result.size()][];
      int n = 0;
      for (Cell cell : result.rawCells()) {
        docs[n++] = CellUtil.cloneQualifier(cell);
      }
      context.getCounter(PairsJob.COUNTERS, "fingerprints with documents").increment(1);
      context.getCounter(PairsJob.COUNTERS, "documents").increment(n);
      context.write(new LongWritable(Codec.fingerprintOf(row.copyBytes())), Node.docs(docs));
    }
  }

  /** A pair, to both its fingerprints. */
  static final class PairEnds extends Mapper<FpPair, ByteWritable, LongWritable, Node> {
    @Override
    protected void map(FpPair pair, ByteWritable distance, Context context) throws IOException, InterruptedException {
      context.write(new LongWritable(pair.a), Node.peer(pair.b, distance.get()));
      context.write(new LongWritable(pair.b), Node.peer(pair.a, distance.get()));
    }
  }

  static final class Meet extends Reducer<LongWritable, Node, FpPair, ByteWritable> {
    private MultipleOutputs<FpPair, ByteWritable> sides;

    @Override
    protected void setup(Context context) {
      sides = new MultipleOutputs<>(context);
    }

    @Override
    protected void reduce(LongWritable fp, Iterable<Node> nodes, Context context)
        throws IOException, InterruptedException {
      byte[][] docs = null;
      long[] peers = new long[4];
      byte[] distances = new byte[4];
      int n = 0;
      for (Node node : nodes) {
        if (node.kind == Node.DOCS) {
          docs = node.docs;
        } else {
          if (n == peers.length) {
            peers = Arrays.copyOf(peers, 2 * n);
            distances = Arrays.copyOf(distances, 2 * n);
          }
          peers[n] = node.fp;
          distances[n++] = node.distance;
        }
      }
      if (docs == null) {
        context.getCounter(PairsJob.COUNTERS, "fingerprints without documents").increment(1);
        return;
      }
      if (n == 0 && docs.length < 2) {
        return; // a document alone: no cluster
      }
      context.getCounter(PairsJob.COUNTERS, "members").increment(1);
      sides.write(MEMBERS, fp, Node.docs(docs), MEMBERS + "/part");
      ByteWritable distance = new ByteWritable();
      for (int i = 0; i < n; i++) {
        distance.set(distances[i]);
        context.write(FpPair.of(fp.get(), peers[i]), distance);
      }
    }

    @Override
    protected void cleanup(Context context) throws IOException, InterruptedException {
      sides.close();
    }
  }

  /** Step 3: a pair both of whose fingerprints have documents is an edge; it is also written as text. */
  static final class Confirm extends Reducer<FpPair, ByteWritable, LongWritable, LongWritable> {
    private MultipleOutputs<LongWritable, LongWritable> sides;

    @Override
    protected void setup(Context context) {
      sides = new MultipleOutputs<>(context);
    }

    @Override
    protected void reduce(FpPair pair, Iterable<ByteWritable> ends, Context context)
        throws IOException, InterruptedException {
      int n = 0;
      byte distance = 0;
      for (ByteWritable end : ends) {
        distance = end.get();
        n++;
      }
      if (n != 2) {
        context.getCounter(PairsJob.COUNTERS, "pairs with an end without documents").increment(1);
        return;
      }
      context.getCounter(PairsJob.COUNTERS, "edges").increment(1);
      context.write(new LongWritable(pair.a), new LongWritable(pair.b));
      sides.write(PAIRS, new Text(String.format("%016x\t%016x", pair.a, pair.b)), new Text(Byte.toString(distance)),
          PAIRS + "/part");
    }

    @Override
    protected void cleanup(Context context) throws IOException, InterruptedException {
      sides.close();
    }
  }
}
