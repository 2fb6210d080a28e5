package io.simhashindex.hfile;

import java.io.IOException;
import java.util.Arrays;
import org.agrona.collections.Long2LongHashMap;
import org.agrona.collections.Long2ObjectHashMap;
import org.agrona.collections.LongHashSet;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.CellUtil;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.io.ImmutableBytesWritable;
import org.apache.hadoop.hbase.mapreduce.TableMapper;
import org.apache.hadoop.io.ByteWritable;
import org.apache.hadoop.mapreduce.Reducer;

/**
 * Clusters, verifying an index whose sketches carry their text's parts (recipe v5, sketch format 4): the pairs
 * a document's parts add.
 *
 * <p>A page stored inside another site's header and footer, or whole beside a truncated copy, can be further
 * from its copy than the drawers reach, although their sketches agree; a part of it (the lines without a
 * tenth or a fifth at each end, or the first 60%) is not.  So each document's part fingerprints meet the
 * drawer rows as a query's parts do: a part P of fingerprint W within the distance of a stored fingerprint F,
 * through a drawer they share, makes (W, F) a pair, which the join and the sketches then judge like any
 * other.  Part never meets part: the simulation that chose this (docs/decisions.md) found the parts against
 * whole fingerprints enough for the clusters' recall, at a fraction of the comparisons.
 *
 * <p>Two jobs.  The part rows (map only, over fp2docs with its values): each distinct part of a fingerprint's
 * documents, once for each of its 10 drawer prefixes.  The reach: the drawer table's rows and the part rows,
 * grouped by prefix with the rows' fingerprints first ({@link GroupKey}); each part is compared with them,
 * and a pair is written from the part's lowest shared drawer only, and only when the drawers did not find
 * (W, F) already.  A pair several parts reach comes out more than once; the join keeps one.
 *
 * <p>A prefix group costs its fingerprints times its parts, about twice the pairs step's m(m-1)/2 for it (times
 * its distinct part values, where it holds many fingerprints: {@link Meeting}).  A group the pairs step found
 * hot (over the budget) is therefore cut into tiles here too: its fingerprints and its parts each fall in one
 * of n blocks by their bits, n the group's size over sqrt(budget), and tile (i, j)
 * holds fingerprint block i and part block j; every fingerprint goes to the n tiles of its block, every part
 * to the n tiles of its, so each fingerprint meets each part in exactly one reduce call, and the calls of one
 * group spread over the reducers.  The tile's number rides above the 40-bit prefix in the reduce key.
 */
final class PartsJob {
  static final String KEY = "simhash.clusters.parts"; // true: the sketches carry parts to meet
  static final long MAX_BLOCKS = 4095; // a side: tile numbers up to 4095^2 + 1 fit the 24 bits above a prefix
  private static final int PREFIX_BITS = 8 * Codec.PREFIX;

  private PartsJob() {}

  /**
   * The hot prefix groups (those the pairs step cut into tiles) and the blocks a side each is cut into here:
   * its size over sqrt(budget), at most {@link #MAX_BLOCKS}.  Empty when no group is hot.
   */
  static Long2LongHashMap hotBlocks(Configuration conf) throws IOException {
    Long2LongHashMap blocks = new Long2LongHashMap(0);
    long block = PairsJob.blockSize(conf.getLong(PairsJob.BUDGET, 50_000_000L));
    PairsJob.readSizes(conf,
        (prefix, size) -> blocks.put(prefix(prefix), Math.min(MAX_BLOCKS, (size + block - 1) / block)));
    return blocks;
  }

  /** The reduce group of tile (fingerprint block i, part block j) of a hot prefix cut into n blocks a side. */
  static long tile(long prefix, long i, long j, long n) {
    return prefix | ((i * n + j + 1) << PREFIX_BITS);
  }

  /** The block among n of a fingerprint or part: by its mixed bits, so a group's blocks are about equal. */
  static long block(long x, long n) {
    x ^= x >>> 33;
    x *= 0xFF51AFD7ED558CCDL;
    x ^= x >>> 33;
    return Math.floorMod(x, n);
  }

  /** Writes {@code record} under {@code prefix}, or for a hot prefix under each tile of its block. */
  static void toGroups(long prefix, long n, long own, boolean fingerprint, GroupKey key, FpPair record,
      PairsJob.TaskInputOutput<GroupKey, FpPair> out) throws IOException, InterruptedException {
    if (n == 0) {
      key.group = prefix;
      out.write(key, record);
      return;
    }
    for (long other = 0; other < n; other++) {
      key.group = fingerprint ? tile(prefix, own, other, n) : tile(prefix, other, own, n);
      out.write(key, record);
    }
  }

  /** A drawer prefix (drawer value and flag) as a reduce key's group: value << 8 | flag. */
  static long prefix(byte[] key) {
    long value = 0;
    for (int b = 0; b < Codec.PREFIX; b++) {
      value = (value << 8) | (key[b] & 0xff);
    }
    return value;
  }

  /** The part rows: each distinct part of a fingerprint's documents, under each of its drawer prefixes. */
  static final class Parts extends TableMapper<GroupKey, FpPair> {
    private final GroupKey key = new GroupKey(0, GroupKey.THEN);
    private final LongHashSet seen = new LongHashSet();
    private Long2LongHashMap hot;

    @Override
    protected void setup(Context context) throws IOException {
      hot = hotBlocks(context.getConfiguration());
    }

    @Override
    protected void map(ImmutableBytesWritable row, Result result, Context context)
        throws IOException, InterruptedException {
      if (row.getLength() != 8) {
        throw new IOException("fp2docs row of " + row.getLength() + " bytes, not 8: is this simhash-index's?");
      }
      long whole = Codec.fingerprintOf(row.copyBytes());
      seen.clear();
      for (Cell cell : result.rawCells()) {
        for (long part : Sketches.parts(CellUtil.cloneValue(cell))) {
          if (part == whole || !seen.add(part)) {
            continue; // documents of one fingerprint mostly share their parts too
          }
          context.getCounter(PairsJob.COUNTERS, "document parts").increment(1);
          FpPair record = new FpPair(part, whole);
          for (int flag = 0; flag < Codec.drawers(); flag++) {
            long prefix = prefix(Codec.drawerKey(part, flag));
            long n = hot.get(prefix);
            toGroups(prefix, n, n == 0 ? 0 : block(part ^ Long.rotateLeft(whole, 17), n), false, key, record,
                context::write);
          }
        }
      }
    }
  }

  /** The drawer table's rows, each to its prefix, ahead of the parts. */
  static final class Wholes extends TableMapper<GroupKey, FpPair> {
    private final GroupKey key = new GroupKey(0, GroupKey.FIRST);
    private Long2LongHashMap hot;

    @Override
    protected void setup(Context context) throws IOException {
      hot = hotBlocks(context.getConfiguration());
    }

    @Override
    protected void map(ImmutableBytesWritable row, Result result, Context context)
        throws IOException, InterruptedException {
      byte[] bytes = row.copyBytes();
      if (Codec.isPartRow(bytes, 0, bytes.length)) { // v7's part rows: the parts this job meets come from fp2docs
        return;
      }
      if (bytes.length != Codec.KEY) {
        throw new IOException(
            "drawer row of " + bytes.length + " bytes, not " + Codec.KEY + ": is this simhash-index's?");
      }
      long prefix = prefix(bytes);
      long fp = Codec.fingerprintOf(Arrays.copyOfRange(bytes, Codec.PREFIX, Codec.KEY));
      long n = hot.get(prefix);
      toGroups(prefix, n, n == 0 ? 0 : block(fp, n), true, key, new FpPair(fp, fp), context::write);
    }
  }

  /** One prefix: its fingerprints held, then each part compared with them. */
  static final class Reach extends Reducer<GroupKey, FpPair, FpPair, ByteWritable> {
    private int maxDistance;
    private final ByteWritable distance = new ByteWritable();

    @Override
    protected void setup(Context context) {
      maxDistance = context.getConfiguration().getInt(PairsJob.MAX_DISTANCE, 3);
    }

    @Override
    protected void reduce(GroupKey key, Iterable<FpPair> values, Context context)
        throws IOException, InterruptedException {
      Meeting meeting = new Meeting((int) (key.group & 0xff), maxDistance);
      for (FpPair value : values) {
        if (key.kind == GroupKey.FIRST) { // the key moves along with the values: the fingerprints come first
          meeting.hold(value.a);
        } else {
          meeting.meet(value.a, value.b, distance, context::write);
        }
      }
      context.getCounter(PairsJob.COUNTERS, "part comparisons").increment(meeting.compared);
      context.getCounter(PairsJob.COUNTERS, "pairs through parts").increment(meeting.found);
      if (key.group >>> PREFIX_BITS != 0) {
        context.getCounter(PairsJob.COUNTERS, "part tiles").increment(1);
      }
    }
  }

  /**
   * One reduce call's fingerprints and the parts that meet them.  Where the group holds many fingerprints, the
   * ones each part value reaches are kept for the next part of that value: a part many documents share (a
   * boilerplate page's, in a prefix with fewer fingerprints than the pairs step calls hot) then costs its
   * comparisons once, not once per document.
   */
  static final class Meeting {
    static final int REMEMBER_FROM = 64; // fingerprints held: with fewer, a hash lookup would save little
    static final int REMEMBERED = 4096; // part values kept at once (forgotten all together past it)
    static final int REMEMBERED_INDICES = 1 << 20; // and the indices they keep, 4 MiB of the task's heap
    private static final int[] NONE = new int[0];
    private final int flag;
    private final int maxDistance;
    private long[] wholes = new long[16];
    private int held;
    private int[] near = new int[16];
    private Long2ObjectHashMap<int[]> reached; // part value -> the indices of the fingerprints it reaches
    private int indices; // held in reached
    long compared;
    long found;

    Meeting(int flag, int maxDistance) {
      this.flag = flag;
      this.maxDistance = maxDistance;
    }

    void hold(long fp) {
      if (held == wholes.length) {
        wholes = Arrays.copyOf(wholes, 2 * held);
      }
      wholes[held++] = fp;
    }

    void meet(long part, long owner, ByteWritable distance, PairsJob.TaskInputOutput<FpPair, ByteWritable> out)
        throws IOException, InterruptedException {
      int[] reach = reached == null ? null : reached.get(part);
      if (reach == null) {
        reach = reachOf(part);
        if (held >= REMEMBER_FROM) {
          if (reached == null) {
            reached = new Long2ObjectHashMap<>();
          } else if (reached.size() == REMEMBERED || indices + reach.length > REMEMBERED_INDICES) {
            reached.clear();
            indices = 0;
          }
          reached.put(part, reach);
          indices += reach.length;
        }
      }
      for (int i : reach) {
        found += pairOf(owner, wholes[i], maxDistance, distance, out);
      }
    }

    /** The indices of the held fingerprints {@code part} reaches from this group's drawer. */
    private int[] reachOf(long part) {
      compared += held;
      long[] fps = wholes; // locals: the loop runs at the speed of comparing each part with each fingerprint
      int n = held;
      int count = 0;
      for (int i = 0; i < n; i++) {
        if (reaches(part, fps[i], flag, maxDistance)) {
          if (count == near.length) {
            near = Arrays.copyOf(near, 2 * count);
          }
          near[count++] = i;
        }
      }
      return count == 0 ? NONE : Arrays.copyOf(near, count);
    }
  }

  /** Whether a part is within the distance of {@code fp} with {@code flag} their lowest shared drawer. */
  static boolean reaches(long part, long fp, int flag, int maxDistance) {
    long reach = part ^ fp;
    return Long.bitCount(reach) <= maxDistance && Codec.lowestSharedDrawer(reach) == flag;
  }

  /**
   * Writes (owner, fp), reached through a part of {@code owner}, unless fp is the owner or the drawers pair
   * the two themselves; 1 if written.
   */
  static int pairOf(long owner, long fp, int maxDistance, ByteWritable distance,
      PairsJob.TaskInputOutput<FpPair, ByteWritable> out) throws IOException, InterruptedException {
    if (fp == owner) {
      return 0;
    }
    long xor = owner ^ fp;
    int d = Long.bitCount(xor);
    if (d <= maxDistance && Codec.lowestSharedDrawer(xor) >= 0) {
      return 0; // a pair of the pairs step already
    }
    distance.set((byte) d);
    out.write(FpPair.of(owner, fp), distance);
    return 1;
  }

  /**
   * Writes (owner, fp) when the part of {@code owner} is within the distance of {@code fp} with {@code flag}
   * its lowest shared drawer, and the drawers do not pair owner and fp themselves; 1 if written.
   */
  static int pair(long part, long owner, long fp, int flag, int maxDistance, ByteWritable distance,
      PairsJob.TaskInputOutput<FpPair, ByteWritable> out) throws IOException, InterruptedException {
    return reaches(part, fp, flag, maxDistance) ? pairOf(owner, fp, maxDistance, distance, out) : 0;
  }
}
