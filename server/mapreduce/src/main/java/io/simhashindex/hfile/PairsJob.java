package io.simhashindex.hfile;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.io.ImmutableBytesWritable;
import org.apache.hadoop.hbase.mapreduce.TableInputFormat;
import org.apache.hadoop.hbase.mapreduce.TableMapper;
import org.apache.hadoop.hbase.mapreduce.TableSplit;
import org.apache.hadoop.hbase.util.Bytes;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.ByteWritable;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.io.SequenceFile;
import org.apache.hadoop.mapreduce.InputSplit;
import org.apache.hadoop.mapreduce.JobContext;
import org.apache.hadoop.mapreduce.Mapper;
import org.apache.hadoop.mapreduce.Reducer;
import org.apache.hadoop.mapreduce.lib.output.MultipleOutputs;

/**
 * Clusters, step 1: the pairs of fingerprints within the distance, from one pass over the drawer table.
 *
 * <p>Rows sharing a 5-byte prefix (drawer value + flag) are adjacent, and two fingerprints within distance 3
 * share at least one prefix, so each map task compares fingerprints only within each prefix group of its
 * rows.  A pair sharing several drawers is reported by the lowest of them only ({@link
 * Codec#lowestSharedDrawer}), so every pair comes out exactly once and no shuffle is needed to deduplicate.
 *
 * <p>A group of m fingerprints costs m(m-1)/2 comparisons.  A group over the budget (a "hot" prefix) is not
 * compared in the map task: its fingerprints go to the side output {@code hot}, numbered, and its size to
 * {@code groups}; the tiles job then compares it in blocks of sqrt(budget) fingerprints, one pair of blocks
 * per reduce call.  A map task holds at most one group's first sqrt(2 budget) fingerprints.
 */
final class PairsJob {
  static final String MAX_DISTANCE = "simhash.clusters.max.distance";
  static final String BUDGET = "simhash.clusters.budget";
  static final String GROUPS = "simhash.clusters.groups"; // the pairs job's output: hot groups' sizes
  static final String COUNTERS = "simhash";
  static final String HOT = "hot";
  static final String SIZES = "groups";
  static final String LARGEST = "largest";
  static final int KEPT_LARGEST = 20;

  private PairsJob() {}

  /** The largest m whose m(m-1)/2 comparisons fit the budget. */
  static int groupLimit(long budget) {
    long m = (long) Math.floor((1 + Math.sqrt(1 + 8.0 * budget)) / 2);
    while (m * (m - 1) / 2 > budget) {
      m--;
    }
    return (int) Math.max(2, Math.min(m, Integer.MAX_VALUE - 8));
  }

  /** A hot group's block: sqrt(budget) fingerprints, so two blocks cost at most the budget. */
  static long blockSize(long budget) {
    return Math.max(1, (long) Math.floor(Math.sqrt((double) budget)));
  }

  /**
   * Region boundaries moved to prefix boundaries.  A region split by HBase inside a prefix group would cut the
   * group in two and lose its pairs across the cut; here the task before the cut reads the whole group (its
   * scan runs on into the next region) and the task after it starts at the next prefix.  Pre-split keys are
   * shorter than a prefix and never cut one.
   */
  public static final class PrefixAlignedInput extends TableInputFormat {
    @Override
    public List<InputSplit> getSplits(JobContext context) throws IOException {
      List<InputSplit> aligned = new ArrayList<>();
      for (InputSplit split : super.getSplits(context)) {
        TableSplit t = (TableSplit) split;
        byte[] start = align(t.getStartRow());
        byte[] end = align(t.getEndRow());
        if (end.length > 0 && Bytes.compareTo(start, end) >= 0) {
          continue; // a region inside one prefix group: the task before it reads the group
        }
        aligned.add(new TableSplit(t.getTable(), t.getScan(), start, end, t.getRegionLocation(),
            t.getEncodedRegionName(), t.getLength()));
      }
      return aligned;
    }

    static byte[] align(byte[] key) {
      if (key.length <= Codec.PREFIX) {
        return key;
      }
      byte[] next = Arrays.copyOf(key, Codec.PREFIX);
      for (int i = Codec.PREFIX - 1; i >= 0; i--) {
        if (++next[i] != 0) {
          return next;
        }
      }
      return new byte[0]; // the last prefix: to the table's end
    }
  }

  /** Compares within each prefix group of the region's rows; hot groups go to the tiles job. */
  static final class Groups extends TableMapper<FpPair, ByteWritable> {
    private final byte[] prefix = new byte[Codec.PREFIX];
    private long[] group = new long[64];
    private int held;
    private long size;
    private int limit;
    private int maxDistance;
    private final ByteWritable distance = new ByteWritable();
    private final BytesWritable prefixKey = new BytesWritable();
    private MultipleOutputs<FpPair, ByteWritable> sides;
    private final PriorityQueue<Object[]> largest =
        new PriorityQueue<>((x, y) -> Long.compare((Long) x[1], (Long) y[1]));

    @Override
    protected void setup(Context context) {
      limit = groupLimit(context.getConfiguration().getLong(BUDGET, 50_000_000L));
      maxDistance = context.getConfiguration().getInt(MAX_DISTANCE, 3);
      sides = new MultipleOutputs<>(context);
    }

    @Override
    protected void map(ImmutableBytesWritable row, Result ignored, Context context)
        throws IOException, InterruptedException {
      byte[] key = row.get();
      int at = row.getOffset();
      if (Codec.isPartRow(key, at, row.getLength())) { // v7's part rows: each document's parts meet in PartsJob
        context.getCounter(COUNTERS, "part rows skipped").increment(1);
        return;
      }
      if (row.getLength() != Codec.KEY) {
        context.getCounter(COUNTERS, "drawer rows not 13 bytes").increment(1);
        throw new IOException("drawer row of " + row.getLength() + " bytes, not " + Codec.KEY
            + ": is this a drawers table of simhash-index?");
      }
      context.getCounter(COUNTERS, "drawer rows").increment(1);
      if (size == 0 || !Bytes.equals(key, at, Codec.PREFIX, prefix, 0, Codec.PREFIX)) {
        finish(context);
        System.arraycopy(key, at, prefix, 0, Codec.PREFIX);
      }
      long fp = 0;
      for (int b = at + Codec.PREFIX; b < at + Codec.KEY; b++) {
        fp = (fp << 8) | (key[b] & 0xff);
      }
      add(fp);
    }

    private void add(long fp) throws IOException, InterruptedException {
      if (size < limit) {
        if (held == group.length) {
          group = Arrays.copyOf(group, Math.min(limit, 2 * held));
        }
        group[held++] = fp;
      } else {
        if (size == limit) { // the group just turned hot: what was held goes first
          for (int i = 0; i < held; i++) {
            hot(i, group[i]);
          }
          held = 0;
        }
        hot(size, fp);
      }
      size++;
    }

    private void hot(long position, long fp) throws IOException, InterruptedException {
      prefixKey.set(prefix, 0, Codec.PREFIX);
      sides.write(HOT, prefixKey, new FpPair(position, fp), HOT + "/part");
    }

    private void finish(Context context) throws IOException, InterruptedException {
      if (size == 0) {
        return;
      }
      context.getCounter(COUNTERS, "prefix groups").increment(1);
      largest.add(new Object[] {prefix.clone(), size});
      if (largest.size() > KEPT_LARGEST) {
        largest.poll();
      }
      if (size > limit) {
        context.getCounter(COUNTERS, "hot groups").increment(1);
        context.getCounter(COUNTERS, "hot group fingerprints").increment(size);
        prefixKey.set(prefix, 0, Codec.PREFIX);
        sides.write(SIZES, prefixKey, new LongWritable(size), SIZES + "/part");
      } else {
        int flag = prefix[Codec.PREFIX - 1];
        long pairs = 0;
        for (int i = 0; i < held; i++) {
          for (int j = i + 1; j < held; j++) {
            pairs += emit(group[i], group[j], flag, maxDistance, distance, context::write);
          }
        }
        context.getCounter(COUNTERS, "comparisons").increment((long) held * (held - 1) / 2);
        context.getCounter(COUNTERS, "pairs").increment(pairs);
      }
      held = 0;
      size = 0;
    }

    @Override
    protected void cleanup(Context context) throws IOException, InterruptedException {
      finish(context);
      for (Object[] entry : largest) {
        prefixKey.set((byte[]) entry[0], 0, Codec.PREFIX);
        sides.write(LARGEST, prefixKey, new LongWritable((Long) entry[1]), LARGEST + "/part");
      }
      sides.close();
    }
  }

  /** Writes the pair (x, y) if it is within the distance and {@code flag} is its lowest shared drawer. */
  static int emit(long x, long y, int flag, int maxDistance, ByteWritable distance,
      TaskInputOutput<FpPair, ByteWritable> out) throws IOException, InterruptedException {
    long xor = x ^ y;
    int d = Long.bitCount(xor);
    if (d > maxDistance || Codec.lowestSharedDrawer(xor) != flag) {
      return 0;
    }
    distance.set((byte) d);
    out.write(FpPair.of(x, y), distance);
    return 1;
  }

  /** What {@link #emit} writes to: a map or a reduce context. */
  interface TaskInputOutput<K, V> {
    void write(K key, V value) throws IOException, InterruptedException;
  }

  // -- hot groups ---------------------------------------------------------------------------------------
  /** What {@link #readSizes} gives each hot group to. */
  interface SizeSink {
    void accept(byte[] prefix, long size);
  }

  /** Each hot group's prefix and size, as the pairs job wrote them under {@link #GROUPS}; none if unset. */
  static void readSizes(Configuration conf, SizeSink sink) throws IOException {
    if (conf.get(GROUPS) == null) {
      return;
    }
    Path groups = new Path(conf.get(GROUPS));
    FileSystem fs = groups.getFileSystem(conf);
    BytesWritable prefix = new BytesWritable();
    LongWritable size = new LongWritable();
    for (FileStatus file : fs.globStatus(new Path(groups, SIZES + "/part*"))) {
      try (SequenceFile.Reader reader = new SequenceFile.Reader(conf, SequenceFile.Reader.file(file.getPath()))) {
        while (reader.next(prefix, size)) {
          sink.accept(prefix.copyBytes(), size.get());
        }
      }
    }
  }

  /** Each fingerprint of a hot group to every tile (pair of blocks) that holds its block. */
  static final class TileFeed extends Mapper<BytesWritable, FpPair, BytesWritable, FpPair> {
    private final Map<String, Long> sizes = new HashMap<>();
    private long block;

    @Override
    protected void setup(Context context) throws IOException {
      Configuration conf = context.getConfiguration();
      block = blockSize(conf.getLong(BUDGET, 50_000_000L));
      readSizes(conf, (prefix, size) -> sizes.put(Arrays.toString(prefix), size));
    }

    @Override
    protected void map(BytesWritable prefix, FpPair positioned, Context context)
        throws IOException, InterruptedException {
      Long size = sizes.get(Arrays.toString(prefix.copyBytes()));
      if (size == null) {
        throw new IOException("a hot group's size is missing: rerun the pairs step");
      }
      long blocks = (size + block - 1) / block;
      long own = positioned.a / block;
      byte[] tile = Arrays.copyOf(prefix.copyBytes(), Codec.PREFIX + 16);
      FpPair member = new FpPair(own, positioned.b);
      for (long other = 0; other < blocks; other++) {
        putLong(tile, Codec.PREFIX, Math.min(own, other));
        putLong(tile, Codec.PREFIX + 8, Math.max(own, other));
        context.write(new BytesWritable(tile), member);
      }
    }

    private static void putLong(byte[] into, int at, long v) {
      for (int b = 0; b < 8; b++) {
        into[at + b] = (byte) (v >>> (56 - 8 * b));
      }
    }
  }

  /** One tile: a block against itself, or two blocks against each other. */
  static final class Tiles extends Reducer<BytesWritable, FpPair, FpPair, ByteWritable> {
    private int maxDistance;
    private final ByteWritable distance = new ByteWritable();

    @Override
    protected void setup(Context context) {
      maxDistance = context.getConfiguration().getInt(MAX_DISTANCE, 3);
    }

    @Override
    protected void reduce(BytesWritable tile, Iterable<FpPair> members, Context context)
        throws IOException, InterruptedException {
      byte[] key = tile.getBytes();
      int flag = key[Codec.PREFIX - 1];
      long first = 0;
      for (int b = Codec.PREFIX; b < Codec.PREFIX + 8; b++) {
        first = (first << 8) | (key[b] & 0xff);
      }
      long[] left = new long[16];
      long[] right = new long[16];
      int nl = 0;
      int nr = 0;
      for (FpPair member : members) {
        if (member.a == first) {
          left = nl == left.length ? Arrays.copyOf(left, 2 * nl) : left;
          left[nl++] = member.b;
        } else {
          right = nr == right.length ? Arrays.copyOf(right, 2 * nr) : right;
          right[nr++] = member.b;
        }
      }
      long pairs = 0;
      if (nr == 0) { // a block against itself
        for (int i = 0; i < nl; i++) {
          for (int j = i + 1; j < nl; j++) {
            pairs += emit(left[i], left[j], flag, maxDistance, distance, context::write);
          }
        }
        context.getCounter(COUNTERS, "comparisons").increment((long) nl * (nl - 1) / 2);
      } else {
        for (int i = 0; i < nl; i++) {
          for (int j = 0; j < nr; j++) {
            pairs += emit(left[i], right[j], flag, maxDistance, distance, context::write);
          }
        }
        context.getCounter(COUNTERS, "comparisons").increment((long) nl * nr);
      }
      context.getCounter(COUNTERS, "pairs").increment(pairs);
      context.getCounter(COUNTERS, "tiles").increment(1);
    }
  }
}
