package io.simhashindex.hfile;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.conf.Configured;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.BufferedMutator;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.Delete;
import org.apache.hadoop.hbase.client.RegionLocator;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.io.ImmutableBytesWritable;
import org.apache.hadoop.hbase.mapreduce.HFileOutputFormat2;
import org.apache.hadoop.hbase.tool.BulkLoadHFiles;
import org.apache.hadoop.io.NullWritable;
import org.apache.hadoop.io.SequenceFile;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.MRJobConfig;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormat;
import org.apache.hadoop.mapreduce.lib.input.SequenceFileInputFormat;
import org.apache.hadoop.mapreduce.lib.output.FileOutputFormat;
import org.apache.hadoop.mapreduce.lib.output.MultipleOutputs;
import org.apache.hadoop.mapreduce.lib.output.SequenceFileOutputFormat;
import org.apache.hadoop.util.Tool;

/**
 * `simhash-index hfile-load`'s Java half.  Commands (staging layout in simhash_server/bulk/hfile.py):
 *
 * <pre>
 *   generate --staging DIR --drawers T --fp2docs T --docs T --timestamp MS [--consult true|false]
 *            [--upload LOCAL_DIR]   (the normalised input, copied to STAGING/input first: on a cluster)
 *            [--inputs LOCAL_FILE --rejects URI [--python CMD] [--env LOCAL_PEX] [--task-args A\tB...]]
 *                                   (input URIs, one a line: read and fingerprinted in map tasks, ParseJob)
 *            [--then-load true [--remove-staging true]]   (then load, as the load command, in this JVM)
 *   load     --staging DIR --drawers T --fp2docs T --docs T [--remove-staging true]
 *   (generate and load on YARN, with --driver cluster: run as a YARN application of their own, {@link Driver})
 *   keys     (unsigned decimal fingerprints on stdin -> their 10 drawer keys in hex, for the codec test)
 * </pre>
 *
 * Each finished step leaves a marker in the staging directory, so a rerun continues where one stopped.
 * Progress and results go to stdout as JSON lines; Hadoop's and HBase's logs go to stderr.
 */
public final class Main extends Configured implements Tool {
  static final String SPLITS = "simhash.hfile.splits";
  private final PrintStream out;

  Main(PrintStream out) {
    this.out = out;
  }

  public static void main(String[] args) {
    Jobs.exit(new Main(System.out), args);
  }

  @Override
  public int run(String[] args) throws Exception {
    if (args.length == 0) {
      System.err.println("usage: generate|load|keys [--name value]...");
      return 2;
    }
    Map<String, String> opts = Jobs.options(args);
    if ("cluster".equals(opts.remove("driver")) && Jobs.onYarn(getConf()) && !"keys".equals(args[0])) {
      return Driver.submit(getConf(), args[0], opts, out);
    }
    switch (args[0]) {
      case "keys":
        return keys();
      case "generate":
        return generate(opts);
      case "load":
        return load(opts);
      default:
        System.err.println("unknown command " + args[0]);
        return 2;
    }
  }

  private static String need(Map<String, String> opts, String name) {
    return Jobs.need(opts, name);
  }

  private int keys() throws IOException {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
    StringBuilder line = new StringBuilder();
    for (String fp; (fp = in.readLine()) != null; ) {
      line.setLength(0);
      long value = Long.parseUnsignedLong(fp.trim());
      for (int flag = 0; flag < Codec.drawers(); flag++) {
        if (flag > 0) {
          line.append(' ');
        }
        for (byte b : Codec.drawerKey(value, flag)) {
          line.append(String.format(Locale.ROOT, "%02x", b & 0xff));
        }
      }
      out.println(line);
    }
    return 0;
  }

  // -- generate -----------------------------------------------------------------------------------------
  private int generate(Map<String, String> opts) throws Exception {
    Configuration conf = getConf();
    Path staging = new Path(need(opts, "staging"));
    conf.setLong(DocsJob.TIMESTAMP, Long.parseLong(need(opts, "timestamp")));
    conf.setBoolean(DocsJob.CONSULT, Boolean.parseBoolean(opts.getOrDefault("consult", "true")));
    conf.setInt(SPLITS, Integer.parseInt(opts.getOrDefault("splits", "4")));
    conf.set(DocsJob.DOCS_TABLE, need(opts, "docs"));
    conf.setBoolean(DrawersJob.PART_ROWS, Boolean.parseBoolean(opts.getOrDefault("part-rows", "false")));
    // Partition files and HBase's staging go beside the HFiles, not to /user/<name> at the root.
    conf.setIfUnset("hbase.fs.tmp.dir", new Path(staging, "tmp").toString());
    FileSystem fs = Jobs.writable(staging, conf);
    if (opts.containsKey("upload")) {
      upload(fs, staging, opts.get("upload"));
    }
    Path input = new Path(staging, "input");
    boolean parsed = opts.containsKey("inputs");
    if (parsed) {
      input = new Path(staging, "parsed");
      if (!fs.exists(new Path(staging, "parsed-input"))) {
        parse(conf, opts, fs, staging, input);
        fs.create(new Path(staging, "parsed-input")).close();
      }
    }
    // The jobs are configured from the tables (families, regions) with a connection closed before they run:
    // an open one ticks its timers every 10 ms for as long as the jobs take.
    Path winners = new Path(staging, DocsJob.WINNERS);
    Job docs = null;
    List<Job> jobs = new ArrayList<>(); // drawers and fp2docs both read the winners, and not each other
    List<String> phases = new ArrayList<>();
    try (Connection connection = ConnectionFactory.createConnection(conf)) {
      if (!fs.exists(new Path(staging, "generated-docs"))) {
        docs = job(conf, "docs", need(opts, "docs"), input, staging);
        docs.setInputFormatClass(parsed ? SequenceFileInputFormat.class : NormalizedInputFormat.class);
        docs.setMapperClass(DocsJob.ById.class);
        docs.setMapOutputValueClass(Entry.class);
        configure(docs, connection, need(opts, "docs"));
        docs.setReducerClass(DocsJob.LastWins.class);
        for (String side : new String[] {DocsJob.WINNERS, DocsJob.MOVES}) {
          MultipleOutputs.addNamedOutput(docs, side, SequenceFileOutputFormat.class, NullWritable.class, Entry.class);
        }
      }
      if (!fs.exists(new Path(staging, "generated-drawers"))) {
        Job job = job(conf, "drawers", need(opts, "drawers"), winners, staging);
        job.setInputFormatClass(SequenceFileInputFormat.class);
        job.setMapperClass(DrawersJob.Keys.class);
        job.setMapOutputValueClass(NullWritable.class);
        configure(job, connection, need(opts, "drawers"));
        job.setReducerClass(DrawersJob.Cells.class);
        jobs.add(job);
        phases.add("drawers");
      }
      if (!fs.exists(new Path(staging, "generated-fp2docs"))) {
        Job job = job(conf, "fp2docs", need(opts, "fp2docs"), winners, staging);
        job.setInputFormatClass(SequenceFileInputFormat.class);
        job.setMapperClass(Fp2docsJob.Columns.class);
        job.setMapOutputValueClass(org.apache.hadoop.hbase.KeyValue.class);
        configure(job, connection, need(opts, "fp2docs")); // sets HBase's CellSortReducer
        jobs.add(job);
        phases.add("fp2docs");
      }
    }
    if (docs != null) {
      splits(docs, input);
      run(docs, "docs");
      // The side outputs landed in the HFile directory, where the bulk load would take them for families.
      Path hfiles = new Path(staging, "docs");
      for (String side : new String[] {DocsJob.WINNERS, DocsJob.MOVES}) {
        fs.delete(new Path(staging, side), true);
        if (fs.exists(new Path(hfiles, side))) {
          rename(fs, new Path(hfiles, side), new Path(staging, side));
        }
      }
      fs.create(new Path(staging, "generated-docs")).close();
    }
    for (Job job : jobs) {
      splits(job, winners);
    }
    Jobs.Succeeded mark = i -> fs.create(new Path(staging, "generated-" + phases.get(i))).close();
    if (Jobs.onYarn(conf)) { // on YARN they run side by side
      Jobs.runTogether(jobs, phases, out, mark);
    } else { // the local runner's tasks share this JVM's heap: one job at a time
      for (int i = 0; i < jobs.size(); i++) {
        Jobs.runTogether(jobs.subList(i, i + 1), phases.subList(i, i + 1), out, index -> {});
        mark.accept(i);
      }
    }
    // Its time, by this machine's clock: a reader of lines relayed in batches (the cluster driver) ends
    // the generate step here, not when the batch arrives.
    out.printf(Locale.ROOT, "{\"event\": \"generated\", \"at_ms\": %d}%n", System.currentTimeMillis());
    // The load in the same JVM: a second one would start, load its classes and connect to HBase again.
    return Boolean.parseBoolean(opts.getOrDefault("then-load", "false")) ? load(opts) : 0;
  }

  /** The normalised input, copied from this machine's {@code local} directory to STAGING/input once. */
  static void upload(FileSystem fs, Path staging, String local) throws IOException {
    if (!fs.exists(new Path(staging, "uploaded-input"))) {
      Path input = new Path(staging, "input");
      fs.delete(input, true); // a copy cut short
      fs.copyFromLocalFile(false, true, new Path(new java.io.File(local).toURI()), input);
      fs.create(new Path(staging, "uploaded-input")).close();
    }
  }

  /** A file named on the command line: on this machine, unless its name is a URI (the cluster driver's). */
  static Path named(String name) {
    return java.net.URI.create(name).getScheme() == null ? new Path(new java.io.File(name).toURI()) : new Path(name);
  }

  /** The inputs' files, read and fingerprinted by the tasks (ParseJob); their rejects to --rejects. */
  private void parse(Configuration base, Map<String, String> opts, FileSystem fs, Path staging, Path output)
      throws Exception {
    Job job = Job.getInstance(new Configuration(base), "simhash-index hfile-load: parse");
    Configuration conf = job.getConfiguration();
    job.setJarByClass(Main.class);
    Path listed = named(need(opts, "inputs"));
    try (BufferedReader in = new BufferedReader(
        new InputStreamReader(listed.getFileSystem(conf).open(listed), StandardCharsets.UTF_8))) {
      for (String uri; (uri = in.readLine()) != null; ) {
        if (!uri.isEmpty()) {
          FileInputFormat.addInputPath(job, new Path(uri));
        }
      }
    }
    job.setInputFormatClass(ParseJob.Files.class);
    job.setMapperClass(ParseJob.Texts.class);
    job.setNumReduceTasks(0);
    job.setOutputKeyClass(NullWritable.class);
    job.setOutputValueClass(Entry.class);
    job.setOutputFormatClass(SequenceFileOutputFormat.class);
    MultipleOutputs.addNamedOutput(job, ParseJob.REJECTS, org.apache.hadoop.mapreduce.lib.output.TextOutputFormat.class,
        NullWritable.class, org.apache.hadoop.io.Text.class);
    fs.delete(output, true); // a failed earlier attempt's
    FileOutputFormat.setOutputPath(job, output);
    conf.set(ParseJob.PYTHON, opts.getOrDefault("python", "python3"));
    conf.set(ParseJob.ARGS, opts.getOrDefault("task-args", ""));
    // The tasks' cost is Python's fingerprinting: a second attempt of a slow one doubles it, and gains little.
    conf.setBoolean("mapreduce.map.speculative", false);
    // Its JVM only moves bytes between the file, the Python and the output: no loop C2 would pay back
    // (docs/decisions.md#submitting-parse-task-and-master-jvms-on-yarn-run-c1-and-the-serial-collector).
    Jobs.lightJvm(conf, MRJobConfig.MAP_JAVA_OPTS);
    if (opts.containsKey("env")) { // the Python environment, a PEX, through the distributed cache
      String pex = opts.get("env"); // placed already where the cluster driver runs
      Path env = named(pex).toUri().getScheme().equals("file")
          ? SharedFiles.place(conf, new java.io.File(pex))
          : new Path(pex);
      job.addCacheFile(new java.net.URI(env.toUri() + "#" + ParseJob.LINK));
      conf.set(ParseJob.ENV, ParseJob.LINK);
    }
    if (opts.containsKey("probe") && Jobs.onYarn(conf)) { // the NodeManagers can run the tasks' Python
      NodeCheck.run(job, opts.get("probe").replace("\\n", "\n"), staging, out);
    }
    Job done = Jobs.run(job, "parse", out);
    ParseJob.publishRejects(fs, output, new Path(need(opts, "rejects")), conf);
    long rejected = done.getCounters().findCounter(ParseJob.Counts.REJECTED).getValue();
    if (opts.containsKey("max-rejects") && rejected > Long.parseLong(opts.get("max-rejects"))) {
      throw new IOException(rejected + " lines rejected, over --max-rejects " + opts.get("max-rejects") + "; see "
          + opts.get("rejects"));
    }
  }

  private static void rename(FileSystem fs, Path from, Path to) throws IOException {
    if (!fs.rename(from, to)) {
      throw new IOException("could not move " + from + " to " + to);
    }
  }

  private static Job job(Configuration conf, String phase, String table, Path input, Path staging)
      throws IOException {
    Job job = Job.getInstance(conf, "simhash-index hfile-load: " + phase + " (" + table + ")");
    job.setJarByClass(Main.class);
    FileInputFormat.addInputPath(job, input);
    Path output = new Path(staging, phase);
    output.getFileSystem(conf).delete(output, true); // a failed earlier attempt's
    FileOutputFormat.setOutputPath(job, output);
    job.setMapOutputKeyClass(ImmutableBytesWritable.class);
    return job;
  }

  /** The docs job leaves one winners file per docs region (often one): split it so every core maps. */
  private static void splits(Job job, Path input) throws IOException {
    Configuration conf = job.getConfiguration();
    long bytes = input.getFileSystem(conf).getContentSummary(input).getLength();
    int splits = conf.getInt(SPLITS, 4);
    FileInputFormat.setMaxInputSplitSize(job, Math.max(1L << 20, (bytes + splits - 1) / splits));
  }

  /** Family settings (compression, encoding, bloom, block size) and one reducer per region, from the table. */
  private static void configure(Job job, Connection connection, String table) throws IOException {
    TableName name = TableName.valueOf(table);
    try (Table t = connection.getTable(name); RegionLocator regions = connection.getRegionLocator(name)) {
      HFileOutputFormat2.configureIncrementalLoad(job, t.getDescriptor(), regions);
    }
  }

  private void run(Job job, String phase) throws Exception {
    Jobs.run(job, phase, out);
  }

  // -- load ---------------------------------------------------------------------------------------------
  /** The order of writes.py: old columns of moved documents, drawers, docs records, fp2docs columns last. */
  private int load(Map<String, String> opts) throws Exception {
    Configuration conf = getConf();
    Path staging = new Path(need(opts, "staging"));
    conf.setIfUnset("hbase.fs.tmp.dir", new Path(staging, "tmp").toString());
    FileSystem fs = staging.getFileSystem(conf);
    for (String phase : new String[] {"docs", "drawers", "fp2docs"}) {
      if (!fs.exists(new Path(staging, "generated-" + phase))) {
        throw new IOException("the HFiles of " + phase + " were not generated: run generate first");
      }
    }
    try (Connection connection = ConnectionFactory.createConnection(conf)) {
      Path moved = new Path(staging, "loaded-moves");
      if (!fs.exists(moved)) {
        long deleted = deleteMoved(conf, fs, connection, new Path(staging, DocsJob.MOVES), need(opts, "fp2docs"));
        fs.create(moved).close();
        out.printf(Locale.ROOT, "{\"event\": \"loaded\", \"phase\": \"moves\", \"deleted\": %d}%n", deleted);
      }
      BulkLoadHFiles loader = BulkLoadHFiles.create(conf);
      for (String phase : new String[] {"drawers", "docs", "fp2docs"}) {
        Path marker = new Path(staging, "loaded-" + phase);
        if (fs.exists(marker)) {
          continue;
        }
        long started = System.nanoTime();
        int files = loader.bulkLoad(TableName.valueOf(need(opts, phase)), new Path(staging, phase)).size();
        fs.create(marker).close();
        out.printf(Locale.ROOT, "{\"event\": \"loaded\", \"phase\": \"%s\", \"files\": %d, \"seconds\": %.3f}%n",
            phase, files, (System.nanoTime() - started) / 1e9);
      }
    }
    if (Boolean.parseBoolean(opts.getOrDefault("remove-staging", "false"))) {
      fs.delete(staging, true);
    }
    return 0;
  }

  private static long deleteMoved(Configuration conf, FileSystem fs, Connection connection, Path moves,
      String table) throws IOException {
    if (!fs.exists(moves)) {
      return 0;
    }
    long deleted = 0;
    Entry entry = new Entry();
    try (BufferedMutator mutator = connection.getBufferedMutator(TableName.valueOf(table))) {
      for (FileStatus file : fs.listStatus(moves)) {
        if (!file.getPath().getName().startsWith("part")) {
          continue;
        }
        try (SequenceFile.Reader reader = new SequenceFile.Reader(conf, SequenceFile.Reader.file(file.getPath()))) {
          while (reader.next(NullWritable.get(), entry)) {
            mutator.mutate(new Delete(Codec.fingerprintRow(entry.fp)).addColumns(Codec.FAMILY, entry.id));
            deleted++;
          }
        }
      }
    }
    return deleted;
  }

}
