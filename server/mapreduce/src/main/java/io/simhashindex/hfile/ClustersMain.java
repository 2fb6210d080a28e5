package io.simhashindex.hfile;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Locale;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.conf.Configured;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.filter.KeyOnlyFilter;
import org.apache.hadoop.hbase.mapreduce.TableInputFormat;
import org.apache.hadoop.hbase.mapreduce.TableMapReduceUtil;
import org.apache.hadoop.hbase.mapreduce.TableSnapshotInputFormat;
import org.apache.hadoop.io.ByteWritable;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapreduce.InputFormat;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.Mapper;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormat;
import org.apache.hadoop.mapreduce.lib.input.MultipleInputs;
import org.apache.hadoop.mapreduce.lib.input.SequenceFileInputFormat;
import org.apache.hadoop.mapreduce.lib.output.FileOutputFormat;
import org.apache.hadoop.mapreduce.lib.output.MultipleOutputs;
import org.apache.hadoop.mapreduce.lib.output.SequenceFileOutputFormat;
import org.apache.hadoop.mapreduce.lib.output.TextOutputFormat;
import org.apache.hadoop.util.Tool;

/**
 * `simhash-index clusters`'s Java half: near-duplicate clusters of the whole index, as MapReduce jobs.
 *
 * <pre>
 *   clusters --work DIR --output DIR --drawers T --fp2docs T [--max-distance 3] [--budget N] [--reducers R]
 *            [--min-similarity F [--clustering centres|components] [--parts stored]]
 *            [--keep smallest-id|earliest|longest]
 *            [--read scan|snapshot [--restore-dir URI]]
 *            [--summary-to LOCAL_DIR] [--copy-to LOCAL_DIR]   (output on a cluster: the tables, or all of it)
 * </pre>
 *
 * Steps (each leaves a marker in the work directory, so a rerun continues where one stopped): pairs
 * (drawers table, {@link PairsJob}), tiles (hot prefix groups, only if any), verifying with --parts the part
 * rows and parts (the pairs the documents' stored parts add, {@link PartsJob}), join and confirm (fp2docs,
 * {@link JoinJob}), star rounds until the components settle ({@link StarsJob}), with --clustering centres the
 * roots and centres steps (stars around a centre within each component, {@link CentresJob}), assign and label
 * ({@link LabelJob}), then publish: the output directory gets {@code clusters/} (doc id, tab, cluster id: the
 * document the cluster keeps, {@link Keep}),
 * {@code pairs/} (fingerprint, fingerprint, distance, in hex; verifying: doc id, doc id, distance,
 * similarity), {@code sizes/} (cluster id, documents), and {@code largest-groups.tsv} and
 * {@code largest-clusters.tsv}.
 *
 * <p>The tables are read through the region servers ({@code --read scan}, the default), or from snapshots
 * of them taken first ({@code --read snapshot}, {@link Snapshots}): HBase's own way for batch jobs to leave
 * the servers that answer queries alone.
 */
public final class ClustersMain extends Configured implements Tool {
  private static final int MAX_ROUNDS = 200;
  private final PrintStream out = System.out;
  private Path restore; // --read snapshot: where the snapshots are restored for the jobs; null: scan

  public static void main(String[] args) {
    Jobs.exit(new ClustersMain(), args);
  }

  @Override
  public int run(String[] args) throws Exception {
    if (args.length == 0 || !args[0].equals("clusters")) {
      System.err.println("usage: clusters --work DIR --output DIR --drawers T --fp2docs T [--name value]...");
      return 2;
    }
    Map<String, String> opts = Jobs.options(args);
    Configuration conf = getConf();
    conf.setInt(PairsJob.MAX_DISTANCE, Integer.parseInt(opts.getOrDefault("max-distance", "3")));
    conf.setLong(PairsJob.BUDGET, Long.parseLong(opts.getOrDefault("budget", "50000000")));
    conf.setInt("mapreduce.job.reduces", Integer.parseInt(opts.getOrDefault("reducers", "2")));
    if (opts.containsKey("min-similarity")) {
      conf.set(JoinJob.MIN_SIMILARITY, Double.toString(Double.parseDouble(opts.get("min-similarity"))));
    }
    String clustering = opts.getOrDefault("clustering", "components");
    if (!clustering.equals("components") && !clustering.equals("centres")) {
      throw new IllegalArgumentException("--clustering must be components or centres, got " + clustering);
    }
    if (clustering.equals("centres") && !opts.containsKey("min-similarity")) {
      throw new IllegalArgumentException("--clustering centres verifies: it needs --min-similarity");
    }
    conf.setBoolean(CentresJob.KEY, clustering.equals("centres"));
    Keep keep = Keep.parse(opts.getOrDefault("keep", "smallest-id"));
    conf.set(Keep.KEY, keep.option());
    Path work = new Path(need(opts, "work"));
    Path output = new Path(need(opts, "output"));
    FileSystem fs = Jobs.writable(work, conf);
    String read = opts.getOrDefault("read", "scan");
    if (!read.equals("scan") && !read.equals("snapshot")) {
      throw new IllegalArgumentException("--read must be scan or snapshot, got " + read);
    }
    if (read.equals("snapshot")) {
      restore = Snapshots.restoreDir(conf, work, opts.get("restore-dir"));
      step(fs, work, "snapshot", () -> Snapshots.take(conf, need(opts, "drawers"), need(opts, "fp2docs"), work));
    }

    Path pairs = new Path(work, "pairs");
    step(fs, work, "pairs", () -> pairs(conf, need(opts, "drawers"), work, pairs));
    Path tiles = new Path(work, "tiles");
    boolean hot = fs.globStatus(new Path(pairs, PairsJob.HOT + "/part*")).length > 0;
    if (hot) {
      conf.set(PairsJob.GROUPS, pairs.toString());
      step(fs, work, "tiles", () -> tiles(conf, pairs, tiles));
    }
    // An index whose sketches carry their text's parts (v5): the pairs its documents' parts add, verifying.
    boolean withParts = opts.containsKey("parts") && JoinJob.floor(conf) >= 0;
    Path partRows = new Path(work, "part-rows");
    Path reached = new Path(work, "parts");
    if (withParts) {
      step(fs, work, "part-rows", () -> partRows(conf, need(opts, "fp2docs"), work, partRows));
      step(fs, work, "parts", () -> reach(conf, need(opts, "drawers"), work, partRows, reached));
    }
    Path join = new Path(work, "join");
    Path[] more = withParts ? (hot ? new Path[] {tiles, reached} : new Path[] {reached})
        : (hot ? new Path[] {tiles} : new Path[0]);
    step(fs, work, "join", () -> join(conf, need(opts, "fp2docs"), work, pairs, more, join));
    Path edges = new Path(work, "edges");
    step(fs, work, "confirm", () -> confirm(conf, join, edges));
    Path sameFingerprint = new Path(join, JoinJob.EDGES);
    Path stars = stars(conf, fs, work, fs.exists(sameFingerprint) ? new Path[] {edges, sameFingerprint}
        : new Path[] {edges});
    Path roots = CentresJob.wanted(conf) ? centres(conf, fs, work, stars, join, edges) : stars;
    Path assign = new Path(work, "assign");
    step(fs, work, "assign", () -> assign(conf, roots, new Path(join, JoinJob.MEMBERS), assign));
    Path label = new Path(work, "label");
    step(fs, work, "label", () -> label(conf, assign, label));
    Publish.publish(conf, fs, pairs, edges, join, label, output);
    if (opts.containsKey("summary-to")) { // the cluster's filesystem is not the caller's: its tables go there
      for (String name : new String[] {"largest-groups.tsv", "largest-clusters.tsv"}) {
        fs.copyToLocalFile(false, new Path(output, name), new Path(opts.get("summary-to"), name), true);
      }
    }
    if (opts.containsKey("copy-to")) {
      for (String name : new String[] {"clusters", "pairs", "sizes"}) {
        fs.copyToLocalFile(false, new Path(output, name), new Path(opts.get("copy-to"), name), true);
      }
    }
    if (restore != null) {
      Snapshots.drop(conf, need(opts, "drawers"), need(opts, "fp2docs"), work, restore);
    }
    out.println("{\"event\": \"done\"}");
    return 0;
  }

  private static String need(Map<String, String> opts, String name) {
    return Jobs.need(opts, name);
  }

  interface Step {
    void run() throws Exception;
  }

  private void step(FileSystem fs, Path work, String name, Step step) throws Exception {
    Path marker = new Path(work, "done-" + name);
    if (fs.exists(marker)) {
      out.printf(Locale.ROOT, "{\"event\": \"skipped\", \"phase\": \"%s\"}%n", name);
      return;
    }
    step.run();
    fs.create(marker).close();
  }

  private Job job(Configuration conf, String phase, Path output) throws IOException {
    Job job = Job.getInstance(conf, "simhash-index clusters: " + phase);
    job.setJarByClass(ClustersMain.class);
    output.getFileSystem(conf).delete(output, true); // a failed earlier attempt's
    FileOutputFormat.setOutputPath(job, output);
    job.setOutputFormatClass(SequenceFileOutputFormat.class);
    return job;
  }

  private static Scan scan(boolean values) {
    Scan scan = new Scan();
    scan.addFamily(Codec.FAMILY);
    scan.setCaching(5000);
    scan.setCacheBlocks(false); // one pass over the table: keep the queries' blocks in the cache
    if (!values) {
      scan.setFilter(new KeyOnlyFilter()); // keys (and fp2docs qualifiers), not sketches
    }
    return scan;
  }

  static Path parts(Path dir) {
    return new Path(dir, "part-*");
  }

  private void pairs(Configuration conf, String drawers, Path work, Path output) throws Exception {
    Job job = job(conf, "pairs (" + drawers + ")", output);
    if (restore == null) {
      TableMapReduceUtil.initTableMapperJob(drawers, scan(false), PairsJob.Groups.class, FpPair.class,
          ByteWritable.class, job, false, PairsJob.PrefixAlignedInput.class);
    } else { // one task a region: Snapshots.take refused boundaries inside a prefix group
      TableMapReduceUtil.initTableSnapshotMapperJob(Snapshots.name(drawers, work), scan(false), PairsJob.Groups.class,
          FpPair.class, ByteWritable.class, job, false, new Path(restore, "drawers"));
    }
    job.setNumReduceTasks(0);
    job.setOutputKeyClass(FpPair.class);
    job.setOutputValueClass(ByteWritable.class);
    MultipleOutputs.addNamedOutput(job, PairsJob.HOT, SequenceFileOutputFormat.class, BytesWritable.class,
        FpPair.class);
    MultipleOutputs.addNamedOutput(job, PairsJob.SIZES, SequenceFileOutputFormat.class, BytesWritable.class,
        LongWritable.class);
    MultipleOutputs.addNamedOutput(job, PairsJob.LARGEST, SequenceFileOutputFormat.class, BytesWritable.class,
        LongWritable.class);
    Jobs.run(job, "pairs", out);
  }

  private void tiles(Configuration conf, Path pairs, Path output) throws Exception {
    Job job = job(conf, "tiles", output);
    job.setInputFormatClass(SequenceFileInputFormat.class);
    FileInputFormat.addInputPath(job, new Path(pairs, PairsJob.HOT + "/part*"));
    job.setMapperClass(PairsJob.TileFeed.class);
    job.setMapOutputKeyClass(BytesWritable.class);
    job.setMapOutputValueClass(FpPair.class);
    job.setReducerClass(PairsJob.Tiles.class);
    job.setOutputKeyClass(FpPair.class);
    job.setOutputValueClass(ByteWritable.class);
    // Never one task: a hot group is few bytes and many comparisons, which its tiles spread over reducers.
    Jobs.run(job, "tiles", out);
  }

  /** The parts step's first job ({@link PartsJob.Parts}): each document's parts under their drawer prefixes. */
  private void partRows(Configuration conf, String fp2docs, Path work, Path output) throws Exception {
    Job job = job(conf, "part rows (" + fp2docs + ")", output);
    if (restore == null) {
      TableMapReduceUtil.initTableMapperJob(fp2docs, scan(true), PartsJob.Parts.class, GroupKey.class, FpPair.class,
          job, false);
    } else {
      TableMapReduceUtil.initTableSnapshotMapperJob(Snapshots.name(fp2docs, work), scan(true), PartsJob.Parts.class,
          GroupKey.class, FpPair.class, job, false, new Path(restore, "fp2docs"));
    }
    job.setNumReduceTasks(0);
    job.setOutputKeyClass(GroupKey.class);
    job.setOutputValueClass(FpPair.class);
    Jobs.run(job, "part rows", out);
  }

  /** The parts step's second job ({@link PartsJob.Reach}): the part rows meet the drawer rows by prefix. */
  private void reach(Configuration conf, String drawers, Path work, Path partRows, Path output) throws Exception {
    Job job = job(conf, "parts (" + drawers + ")", output);
    Class<? extends InputFormat> table = TableInputFormat.class;
    if (restore == null) {
      TableMapReduceUtil.initTableMapperJob(drawers, scan(false), PartsJob.Wholes.class, GroupKey.class,
          FpPair.class, job, false);
    } else {
      TableMapReduceUtil.initTableSnapshotMapperJob(Snapshots.name(drawers, work), scan(false),
          PartsJob.Wholes.class, GroupKey.class, FpPair.class, job, false, new Path(restore, "drawers"));
      table = TableSnapshotInputFormat.class;
    }
    // The table's input has no path: MultipleInputs needs one to tell its inputs apart.
    MultipleInputs.addInputPath(job, new Path(output.getParent(), "drawers-table"), table, PartsJob.Wholes.class);
    MultipleInputs.addInputPath(job, parts(partRows), SequenceFileInputFormat.class, Mapper.class);
    job.setPartitionerClass(GroupKey.GroupPartitioner.class);
    job.setSortComparatorClass(GroupKey.Comparator.class);
    job.setGroupingComparatorClass(GroupKey.ByGroup.class);
    job.setReducerClass(PartsJob.Reach.class);
    job.setOutputKeyClass(FpPair.class);
    job.setOutputValueClass(ByteWritable.class);
    Jobs.run(job, "parts", out);
  }

  private void join(Configuration conf, String fp2docs, Path work, Path pairs, Path[] more, Path output)
      throws Exception {
    Job job = job(conf, "join (" + fp2docs + ")", output);
    Scan scan = scan(false); // keys: the members' sketches are fetched in the reducers, for them only
    Class<? extends InputFormat> table = TableInputFormat.class;
    if (restore == null) {
      TableMapReduceUtil.initTableMapperJob(fp2docs, scan, JoinJob.Documents.class, LongWritable.class,
          Node.class, job, false);
    } else {
      TableMapReduceUtil.initTableSnapshotMapperJob(Snapshots.name(fp2docs, work), scan, JoinJob.Documents.class,
          LongWritable.class, Node.class, job, false, new Path(restore, "fp2docs"));
      job.getConfiguration().set(TableInputFormat.INPUT_TABLE, fp2docs); // verifying reads sketches live
      table = TableSnapshotInputFormat.class;
    }
    // The table's input has no path: MultipleInputs needs one to tell its inputs apart.
    MultipleInputs.addInputPath(job, new Path(output.getParent(), "fp2docs-table"), table, JoinJob.Documents.class);
    MultipleInputs.addInputPath(job, parts(pairs), SequenceFileInputFormat.class, JoinJob.PairEnds.class);
    for (Path found : more) { // the tiles' pairs, the parts'
      MultipleInputs.addInputPath(job, parts(found), SequenceFileInputFormat.class, JoinJob.PairEnds.class);
    }
    job.setReducerClass(JoinJob.Meet.class);
    job.setOutputKeyClass(FpPair.class);
    job.setOutputValueClass(Node.class);
    MultipleOutputs.addNamedOutput(job, JoinJob.MEMBERS, SequenceFileOutputFormat.class, LongWritable.class,
        Node.class);
    MultipleOutputs.addNamedOutput(job, JoinJob.EDGES, SequenceFileOutputFormat.class, LongWritable.class,
        LongWritable.class);
    MultipleOutputs.addNamedOutput(job, JoinJob.PAIRS, TextOutputFormat.class, Text.class, Text.class);
    CentresJob.scored(job);
    Jobs.run(job, "join", out);
  }

  private void confirm(Configuration conf, Path join, Path output) throws Exception {
    Job job = job(conf, "confirm", output);
    job.setInputFormatClass(SequenceFileInputFormat.class);
    FileInputFormat.addInputPath(job, parts(join));
    job.setMapperClass(Mapper.class);
    job.setMapOutputKeyClass(FpPair.class);
    job.setMapOutputValueClass(Node.class);
    job.setReducerClass(JoinJob.Confirm.class);
    job.setOutputKeyClass(LongWritable.class);
    job.setOutputValueClass(LongWritable.class);
    MultipleOutputs.addNamedOutput(job, JoinJob.PAIRS, TextOutputFormat.class, Text.class, Text.class);
    CentresJob.scored(job);
    Jobs.small(job, parts(join));
    Jobs.run(job, "confirm", out);
  }

  /** Large-star and small-star rounds until neither changes an edge; the last round's edges are stars. */
  private Path stars(Configuration conf, FileSystem fs, Path work, Path[] edges) throws Exception {
    Path[] input = edges;
    for (int round = 1; round <= MAX_ROUNDS; round++) {
      Path dir = new Path(work, "stars/" + round);
      long large = star(conf, fs, input, new Path(dir, "large"), true, round);
      Path small = new Path(dir, "small");
      long changes = large + star(conf, fs, new Path[] {new Path(dir, "large")}, small, false, round);
      if (changes == 0) {
        out.printf(Locale.ROOT, "{\"event\": \"settled\", \"phase\": \"stars\", \"rounds\": %d}%n", round);
        return small;
      }
      input = new Path[] {small};
    }
    throw new IOException("the components did not settle in " + MAX_ROUNDS + " rounds");
  }

  private long star(Configuration conf, FileSystem fs, Path[] input, Path output, boolean large, int round)
      throws Exception {
    Path marker = output.suffix(".changes");
    if (fs.exists(marker)) {
      try (FSDataInputStream in = fs.open(marker)) {
        return Long.parseLong(new BufferedReader(new InputStreamReader(in, StandardCharsets.US_ASCII)).readLine());
      }
    }
    String phase = (large ? "large-star " : "small-star ") + round;
    Job job = job(conf, phase, output);
    job.setInputFormatClass(SequenceFileInputFormat.class);
    for (Path dir : input) {
      FileInputFormat.addInputPath(job, parts(dir));
    }
    job.setMapperClass(large ? StarsJob.BothWays.class : StarsJob.ToLarger.class);
    job.setReducerClass(large ? StarsJob.LargeStar.class : StarsJob.SmallStar.class);
    job.setOutputKeyClass(LongWritable.class);
    job.setOutputValueClass(LongWritable.class);
    Jobs.small(job, Arrays.stream(input).map(ClustersMain::parts).toArray(Path[]::new));
    Jobs.run(job, phase, out);
    long changes = job.getCounters().findCounter(PairsJob.COUNTERS, StarsJob.CHANGES).getValue();
    try (OutputStream o = fs.create(marker)) {
      o.write((changes + "\n").getBytes(StandardCharsets.US_ASCII));
    }
    return changes;
  }

  /** The roots and centres steps; returns the centres' (member, centre) edges, read as the stars' are. */
  private Path centres(Configuration conf, FileSystem fs, Path work, Path stars, Path join, Path edges)
      throws Exception {
    Path rooted = new Path(work, "rooted");
    Path[] scored = {new Path(join, CentresJob.SCORED + "/part*"), new Path(edges, CentresJob.SCORED + "/part*")};
    step(fs, work, "roots", () -> {
      Job job = job(conf, "roots", rooted);
      CentresJob.roots(job, parts(stars), scored);
      Jobs.small(job, parts(stars), scored[0], scored[1]);
      Jobs.run(job, "roots", out);
    });
    Path centres = new Path(work, "centres");
    step(fs, work, "centres", () -> {
      Job job = job(conf, "centres", centres);
      CentresJob.centres(job, parts(rooted));
      Jobs.small(job, parts(rooted));
      Jobs.run(job, "centres", out);
    });
    return centres;
  }

  private void assign(Configuration conf, Path stars, Path members, Path output) throws Exception {
    Job job = job(conf, "assign", output);
    MultipleInputs.addInputPath(job, parts(stars), SequenceFileInputFormat.class, LabelJob.Roots.class);
    if (Publish.glob(members.getFileSystem(conf), parts(members)).length > 0) { // none: no pairs, no shared fingerprint
      MultipleInputs.addInputPath(job, parts(members), SequenceFileInputFormat.class, Mapper.class);
    }
    job.setMapOutputKeyClass(LongWritable.class);
    job.setMapOutputValueClass(Node.class);
    job.setReducerClass(LabelJob.Assign.class);
    job.setOutputKeyClass(RootDoc.class);
    job.setOutputValueClass(LongWritable.class);
    Jobs.small(job, parts(stars), parts(members));
    Jobs.run(job, "assign", out);
  }

  private void label(Configuration conf, Path assign, Path output) throws Exception {
    Job job = job(conf, "label", output);
    job.setInputFormatClass(SequenceFileInputFormat.class);
    FileInputFormat.addInputPath(job, parts(assign));
    job.setMapperClass(Mapper.class);
    job.setMapOutputKeyClass(RootDoc.class);
    job.setMapOutputValueClass(LongWritable.class);
    job.setPartitionerClass(RootDoc.RootPartitioner.class);
    job.setSortComparatorClass(RootDoc.Comparator.class);
    job.setGroupingComparatorClass(RootDoc.ByRoot.class);
    job.setReducerClass(LabelJob.Label.class);
    job.setOutputFormatClass(TextOutputFormat.class);
    job.setOutputKeyClass(Text.class);
    job.setOutputValueClass(Text.class);
    MultipleOutputs.addNamedOutput(job, LabelJob.SIZES, TextOutputFormat.class, Text.class, Text.class);
    MultipleOutputs.addNamedOutput(job, LabelJob.LARGEST, TextOutputFormat.class, Text.class, Text.class);
    Jobs.small(job, parts(assign));
    Jobs.run(job, "label", out);
  }
}
