package io.simhashindex.hfile;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import org.agrona.collections.LongHashSet;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.CellUtil;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.io.ImmutableBytesWritable;
import org.apache.hadoop.hbase.mapreduce.TableInputFormat;
import org.apache.hadoop.hbase.mapreduce.TableMapper;
import org.apache.hadoop.io.ByteWritable;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.io.NullWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapreduce.Mapper;
import org.apache.hadoop.mapreduce.Reducer;
import org.apache.hadoop.mapreduce.TaskInputOutputContext;
import org.apache.hadoop.mapreduce.lib.output.MultipleOutputs;

/**
 * Clusters, steps 2 and 3: pairs meet the documents of their fingerprints (fp2docs).
 *
 * <p>The join (step 2) meets each fingerprint's fp2docs row with its pairs.  A fingerprint with no documents
 * (a drawer row whose documents were deleted) is dropped, with its pairs.  A fingerprint in a pair, or with
 * several documents, becomes a member: its documents go to {@code members}.  Each surviving pair is written
 * once from each end, and the confirm step (3) keeps the pairs written from both ends: both have documents.
 *
 * <p>Verifying ({@link #MIN_SIMILARITY}), the components are of documents: the reducer fetches the sketches
 * of member fingerprints only (batched gets from fp2docs: the scan reads keys alone, so the shuffle does not
 * carry every document's sketch), gives each of their documents a node id (its reduce task's number and an
 * ordinal), each end of a pair carries its documents' sketches, and only pairs of documents whose sketches
 * compare at or above the floor become edges, including documents sharing one fingerprint.  Documents
 * without a comparable sketch (or deleted since the scan) join nothing.
 */
final class JoinJob {
  static final String MIN_SIMILARITY = "simhash.clusters.min.similarity"; // unset: no verification
  static final String MEMBERS = "members";
  static final String PAIRS = "pairs";
  static final String EDGES = "edges"; // verifying: edges between documents of one fingerprint
  private static final int TASK_SHIFT = 40; // node id = map task << 40 | ordinal

  private JoinJob() {}

  static double floor(Configuration conf) {
    return Double.parseDouble(conf.get(MIN_SIMILARITY, "-1"));
  }

  /** An fp2docs row: the fingerprint and its documents' ids. */
  static final class Documents extends TableMapper<LongWritable, Node> {
    private Keep keep;

    @Override
    protected void setup(Context context) {
      keep = Keep.of(context.getConfiguration());
    }

    @Override
    protected void map(ImmutableBytesWritable row, Result result, Context context)
        throws IOException, InterruptedException {
      if (row.getLength() != 8) {
        throw new IOException("fp2docs row of " + row.getLength() + " bytes, not 8: is this simhash-index's?");
      }
      byte[][] docs = new byte[result.size()][];
      long[] ranks = keep.ranked() ? new long[docs.length] : null;
      int n = 0;
      for (Cell cell : result.rawCells()) {
        if (ranks != null) {
          ranks[n] = keep.rank(cell);
        }
        docs[n++] = CellUtil.cloneQualifier(cell);
      }
      context.getCounter(PairsJob.COUNTERS, "fingerprints with documents").increment(1);
      context.getCounter(PairsJob.COUNTERS, "documents").increment(n);
      context.write(new LongWritable(Codec.fingerprintOf(row.copyBytes())), Node.docs(docs, null, null).ranked(ranks));
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

  static final class Meet extends Reducer<LongWritable, Node, FpPair, Node> {
    private static final int BATCH = 1000; // member fingerprints per batch of gets
    private MultipleOutputs<FpPair, Node> sides;
    private double floor;
    private boolean centres;
    private boolean ranksBySketch; // --keep longest: the members' sketches rank them, verifying or not
    private Connection connection;
    private Table fp2docs;
    private long next; // the next node id
    private final List<Member> batch = new ArrayList<>();

    /** A fingerprint with documents and pairs, waiting for its sketches. */
    private static final class Member {
      final long fp;
      final Node docs;
      final long[] peers;
      final byte[] distances;

      Member(long fp, Node docs, long[] peers, byte[] distances) {
        this.fp = fp;
        this.docs = docs;
        this.peers = peers;
        this.distances = distances;
      }
    }

    @Override
    protected void setup(Context context) throws IOException {
      Configuration conf = context.getConfiguration();
      sides = new MultipleOutputs<>(context);
      floor = floor(conf);
      centres = CentresJob.wanted(conf);
      ranksBySketch = Keep.of(conf).ranksBySketch();
      if (floor >= 0 || ranksBySketch) {
        connection = ConnectionFactory.createConnection(conf);
        fp2docs = connection.getTable(TableName.valueOf(conf.get(TableInputFormat.INPUT_TABLE)));
        next = (long) context.getTaskAttemptID().getTaskID().getId() << TASK_SHIFT;
      }
    }

    @Override
    protected void reduce(LongWritable fp, Iterable<Node> nodes, Context context)
        throws IOException, InterruptedException {
      Node docs = null;
      long[] peers = new long[4];
      byte[] distances = new byte[4];
      int n = 0;
      for (Node node : nodes) {
        if (node.kind == Node.DOCS) {
          docs = Node.docs(node.docs, null, null).ranked(node.ranks); // Hadoop reuses the object, not its arrays
        } else {
          if (n == peers.length) {
            peers = Arrays.copyOf(peers, 2 * n);
            distances = Arrays.copyOf(distances, 2 * n);
          }
          peers[n] = node.fp;
          distances[n++] = node.distance;
        }
      }
      n = distinct(peers, distances, n);
      if (docs == null) {
        context.getCounter(PairsJob.COUNTERS, "fingerprints without documents").increment(1);
        return;
      }
      if (n == 0 && docs.docs.length < 2) {
        return; // a document alone: no cluster
      }
      context.getCounter(PairsJob.COUNTERS, "members").increment(1);
      Member member = new Member(fp.get(), docs, Arrays.copyOf(peers, n), Arrays.copyOf(distances, n));
      if (floor < 0 && !ranksBySketch) {
        write(member, context);
        return;
      }
      batch.add(member);
      if (batch.size() == BATCH) {
        flush(context);
      }
    }

    /**
     * Keeps the first of each peer among the first {@code n}, in place; returns how many remain.  The pairs
     * step writes a pair once, but the parts step can write one that several parts reach again.
     */
    static int distinct(long[] peers, byte[] distances, int n) {
      if (n < 2) {
        return n;
      }
      LongHashSet seen = n > 32 ? new LongHashSet(2 * n) : null;
      int kept = 0;
      for (int i = 0; i < n; i++) {
        boolean again = false;
        if (seen != null) {
          again = !seen.add(peers[i]);
        } else {
          for (int j = 0; j < kept && !again; j++) {
            again = peers[j] == peers[i];
          }
        }
        if (!again) {
          peers[kept] = peers[i];
          distances[kept++] = distances[i];
        }
      }
      return kept;
    }

    /** Verifying or ranking by sketch: the batch's sketches, one multi-get, then each member written. */
    private void flush(Context context) throws IOException, InterruptedException {
      List<Get> gets = new ArrayList<>(batch.size());
      for (Member member : batch) {
        gets.add(new Get(Codec.fingerprintRow(member.fp)).addFamily(Codec.FAMILY));
      }
      Result[] rows = fp2docs.get(gets);
      for (int m = 0; m < batch.size(); m++) {
        Node docs = batch.get(m).docs;
        if (floor >= 0) {
          docs.nodes = new long[docs.docs.length];
          docs.sketches = new byte[docs.docs.length][];
        }
        for (int i = 0; i < docs.docs.length; i++) {
          byte[] sketch = rows[m].getValue(Codec.FAMILY, docs.docs[i]);
          if (ranksBySketch) {
            docs.ranks[i] = Keep.longest(sketch);
          }
          if (floor >= 0) {
            docs.sketches[i] = sketch == null ? Codec.EMPTY : sketch; // deleted since the scan: unverifiable
            docs.nodes[i] = next++;
          }
        }
        write(batch.get(m), context);
      }
      batch.clear();
    }

    private void write(Member member, Context context) throws IOException, InterruptedException {
      Node docs = member.docs;
      LongWritable fp = new LongWritable(member.fp);
      if (docs.nodes == null) {
        sides.write(MEMBERS, fp, Node.docs(docs.docs, null, null).ranked(docs.ranks), MEMBERS + "/part");
      } else {
        for (int i = 0; i < docs.docs.length; i++) {
          long[] rank = docs.ranks == null ? null : new long[] {docs.ranks[i]};
          sides.write(MEMBERS, new LongWritable(docs.nodes[i]),
              Node.docs(new byte[][] {docs.docs[i]}, null, null).ranked(rank), MEMBERS + "/part");
        }
        verify(docs, docs, (byte) 0, floor, centres, sides, context);
      }
      // Unverified, an end needs no documents in the pair: only that it has some.
      Node side = docs.nodes == null ? Node.docs(new byte[0][], null, null) : docs;
      for (int i = 0; i < member.peers.length; i++) {
        context.write(FpPair.of(member.fp, member.peers[i]), side.side(member.distances[i]));
      }
    }

    @Override
    protected void cleanup(Context context) throws IOException, InterruptedException {
      if (!batch.isEmpty()) {
        flush(context);
      }
      sides.close();
      if (connection != null) {
        fp2docs.close();
        connection.close();
      }
    }
  }

  /** Step 3: a pair both of whose fingerprints have documents is an edge; it is also written as text. */
  static final class Confirm extends Reducer<FpPair, Node, LongWritable, LongWritable> {
    private MultipleOutputs<LongWritable, LongWritable> sides;
    private double floor;
    private boolean centres;

    @Override
    protected void setup(Context context) {
      sides = new MultipleOutputs<>(context);
      floor = floor(context.getConfiguration());
      centres = CentresJob.wanted(context.getConfiguration());
    }

    @Override
    protected void reduce(FpPair pair, Iterable<Node> ends, Context context)
        throws IOException, InterruptedException {
      List<Node> both = new ArrayList<>(2);
      for (Node end : ends) {
        both.add(end.side(end.distance)); // a copy: Hadoop reuses the value object
      }
      if (both.size() != 2) {
        context.getCounter(PairsJob.COUNTERS, "pairs with an end without documents").increment(1);
        return;
      }
      byte distance = both.get(0).distance;
      if (both.get(0).nodes != null) {
        verify(both.get(0), both.get(1), distance, floor, centres, sides, context);
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

  /**
   * The verified edges between the documents of two ends (or of one fingerprint, {@code a == b}): to the
   * {@code edges} output, or the main one, and as text "doc, doc, distance, similarity" to {@code pairs}; for
   * the centres step ({@code scored}), as {@link Link}s to {@link CentresJob#SCORED} too.
   */
  @SuppressWarnings({"unchecked", "rawtypes"})
  static void verify(Node a, Node b, byte distance, double floor, boolean scored, MultipleOutputs sides,
      TaskInputOutputContext context) throws IOException, InterruptedException {
    boolean same = a == b;
    for (int i = 0; i < a.docs.length; i++) {
      for (int j = same ? i + 1 : 0; j < b.docs.length; j++) {
        if (!Sketches.comparable(a.sketches[i], b.sketches[j])) {
          context.getCounter(PairsJob.COUNTERS, "document pairs without comparable sketches").increment(1);
          continue;
        }
        double similarity = Sketches.similarity(a.sketches[i], b.sketches[j]);
        if (similarity < floor) {
          context.getCounter(PairsJob.COUNTERS, "document pairs below the floor").increment(1);
          continue;
        }
        context.getCounter(PairsJob.COUNTERS, "edges").increment(1);
        LongWritable x = new LongWritable(a.nodes[i]);
        LongWritable y = new LongWritable(b.nodes[j]);
        if (same) {
          sides.write(EDGES, x, y, EDGES + "/part");
        } else {
          context.write(x, y);
        }
        if (scored) {
          sides.write(CentresJob.SCORED, Link.of(a.nodes[i], a.docs[i], b.nodes[j], b.docs[j], similarity),
              NullWritable.get(), CentresJob.SCORED + "/part");
        }
        String line = LabelJob.escape(a.docs[i]) + "\t" + LabelJob.escape(b.docs[j]) + "\t" + distance;
        String printed = String.format(Locale.ROOT, "%.4f", Link.score(similarity) / 10_000.0); // as ordered
        sides.write(PAIRS, new Text(line), new Text(printed), PAIRS + "/part");
      }
    }
  }
}
