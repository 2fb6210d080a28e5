package io.simhashindex.hfile;

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.DataInput;
import java.io.DataOutput;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.NullWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.io.Writable;
import org.apache.hadoop.mapreduce.InputFormat;
import org.apache.hadoop.mapreduce.InputSplit;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.JobContext;
import org.apache.hadoop.mapreduce.MRJobConfig;
import org.apache.hadoop.mapreduce.Mapper;
import org.apache.hadoop.mapreduce.RecordReader;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.hadoop.mapreduce.lib.output.FileOutputFormat;
import org.apache.hadoop.yarn.api.records.NodeReport;
import org.apache.hadoop.yarn.api.records.NodeState;
import org.apache.hadoop.yarn.client.api.YarnClient;

/**
 * Before the parse job is submitted on YARN: one task asked for on each running NodeManager starts the
 * tasks' Python from the PEX (as the parse job will) and makes a probe fingerprint and sketch
 * (file_task.py {@code --probe}), which must equal the recipe's pinned lines (file_task.py's, kept equal to
 * what the build computes by its unit test).  A node without the Python the
 * PEX needs, or whose Python makes another fingerprint, fails the check with a message naming the node and
 * what is missing, before any input is read.  YARN places a task where asked when it can, not always: the
 * nodes that ran none are named, and not counted as checked.  The nodes come from the ResourceManager; each
 * task writes the node it ran on.
 *
 * <p>A node that passed is remembered, for the same PEX (named by its content), Python, task arguments and
 * probe, by an empty file of its name under {@value #CHECKED} in the shared directory: a later load asks
 * only the nodes not remembered, and submits no check job when there are none (a short job, but most of what
 * a load costs the submitting machine beside the parse job's submission).  A remembered node is still held
 * to the probe: each parse task makes it first ({@code --expect-probe}) and, if its Python no longer starts
 * or makes another fingerprint, fails naming the node and removes the node's mark, so no record is
 * fingerprinted there and the next load checks it again.
 */
final class NodeCheck {
  private NodeCheck() {}

  static final String EXPECT = "simhash.check.expect"; // the recipe's probe fingerprint and sketch lines
  static final String NODES = "simhash.check.nodes"; // comma-separated
  static final String MARKS = "simhash.check.marks"; // the directory of the nodes checked for these settings
  static final String CHECKED = "checked-nodes";
  static final int OTHER_PROBE = 3; // file_task's exit status when its probe differs from --expect-probe

  /**
   * Runs the check for {@code parse}'s settings (its PEX and Python) on the running nodes not remembered as
   * checked for them; returns the nodes it could not check.  Sets {@code parse}'s {@value #EXPECT} and
   * {@value #MARKS}, for its tasks' own probe.
   */
  static List<String> run(Job parse, String expect, Path staging, PrintStream out) throws Exception {
    Path marks = marks(parse, expect);
    parse.getConfiguration().set(EXPECT, expect);
    parse.getConfiguration().set(MARKS, marks.toString());
    Configuration conf = new Configuration(parse.getConfiguration());
    List<String> nodes = runningNodes(conf);
    FileSystem fs = marks.getFileSystem(conf);
    TreeSet<String> remembered = new TreeSet<>();
    try {
      for (FileStatus mark : fs.listStatus(marks)) {
        remembered.add(mark.getPath().getName());
      }
    } catch (FileNotFoundException none) {
      // no node checked yet for these settings
    }
    List<String> asked = new ArrayList<>();
    for (String node : nodes) {
      if (!remembered.contains(node)) {
        asked.add(node);
      }
    }
    TreeSet<String> checked = asked.isEmpty() ? new TreeSet<>() : check(conf, asked, staging, out);
    List<String> unchecked = new ArrayList<>();
    for (String node : asked) {
      if (checked.contains(node)) {
        fs.create(new Path(marks, node), true).close();
      } else {
        unchecked.add(node);
      }
    }
    out.println("{\"event\": \"checked\", \"nodes\": " + (nodes.size() - unchecked.size())
        + ", \"remembered\": " + (nodes.size() - asked.size()) + ", \"unchecked\": \""
        + String.join(",", unchecked) + "\"}");
    return unchecked;
  }

  /** The check job over {@code nodes}; the names of the nodes its tasks ran on. */
  private static TreeSet<String> check(Configuration base, List<String> nodes, Path staging, PrintStream out)
      throws Exception {
    Job job = Job.getInstance(base, "simhash-index hfile-load: check the NodeManagers");
    Configuration conf = job.getConfiguration();
    conf.set(NODES, String.join(",", nodes));
    conf.setInt(MRJobConfig.MAP_MAX_ATTEMPTS, 1); // a node that cannot run the tasks fails the check at once
    conf.setBoolean(MRJobConfig.JOB_UBERTASK_ENABLE, false); // each task on its own node
    job.setJarByClass(NodeCheck.class);
    job.setInputFormatClass(OnePerNode.class);
    job.setMapperClass(Probe.class);
    job.setNumReduceTasks(0);
    job.setOutputKeyClass(Text.class);
    job.setOutputValueClass(NullWritable.class);
    Path ran = new Path(staging, "checked-nodes"); // each task's node, a line
    FileSystem fs = ran.getFileSystem(conf);
    fs.delete(ran, true);
    FileOutputFormat.setOutputPath(job, ran);
    Jobs.run(job, "check", out);
    TreeSet<String> checked = new TreeSet<>();
    for (FileStatus part : fs.globStatus(new Path(ran, "part-*"))) {
      InputStreamReader reader = new InputStreamReader(fs.open(part.getPath()), StandardCharsets.UTF_8);
      try (BufferedReader in = new BufferedReader(reader)) {
        for (String line; (line = in.readLine()) != null; ) {
          checked.addAll(java.util.Arrays.asList(line.trim().split("\t")));
        }
      }
    }
    return checked;
  }

  /** Where the nodes checked for {@code parse}'s PEX, Python, task arguments and {@code expect} are marked. */
  static Path marks(Job parse, String expect) throws IOException {
    Configuration conf = parse.getConfiguration();
    StringBuilder settings = new StringBuilder();
    URI[] files = parse.getCacheFiles(); // the PEX's shared copy, named by its content
    if (files != null) {
      for (URI file : files) {
        settings.append(file).append('\n');
      }
    }
    settings.append(conf.get(ParseJob.PYTHON, "python3")).append('\n').append(conf.get(ParseJob.ARGS, ""))
        .append('\n').append(expect);
    try {
      byte[] digest = MessageDigest.getInstance("SHA-256").digest(settings.toString().getBytes(StandardCharsets.UTF_8));
      return new Path(new Path(SharedFiles.directory(conf), CHECKED), SharedFiles.hex(digest));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /** In a parse task whose node failed the probe: its mark goes, so that the next load checks it again. */
  static void forget(Configuration conf) {
    String marks = conf.get(MARKS);
    if (marks == null) {
      return;
    }
    try {
      InetAddress self = InetAddress.getLocalHost();
      Path dir = new Path(marks);
      FileSystem fs = dir.getFileSystem(conf);
      for (String name : new String[] {self.getHostName(), self.getCanonicalHostName()}) {
        fs.delete(new Path(dir, name), false);
      }
    } catch (IOException e) {
      System.err.println("could not remove this node's mark in " + marks + ": " + e);
    }
  }

  private static List<String> runningNodes(Configuration conf) throws Exception {
    YarnClient yarn = YarnClient.createYarnClient();
    yarn.init(conf);
    yarn.start();
    try {
      TreeSet<String> hosts = new TreeSet<>();
      for (NodeReport node : yarn.getNodeReports(NodeState.RUNNING)) {
        hosts.add(node.getNodeId().getHost());
      }
      if (hosts.isEmpty()) {
        throw new IOException("the ResourceManager knows no running NodeManager: no task could run");
      }
      return new ArrayList<>(hosts);
    } finally {
      yarn.stop();
    }
  }

  /** One split per node, asking for that node. */
  static final class OnePerNode extends InputFormat<Text, NullWritable> {
    @Override
    public List<InputSplit> getSplits(JobContext context) {
      List<InputSplit> splits = new ArrayList<>();
      for (String node : context.getConfiguration().getStrings(NODES)) {
        splits.add(new NodeSplit(node));
      }
      return splits;
    }

    @Override
    public RecordReader<Text, NullWritable> createRecordReader(InputSplit split, TaskAttemptContext context) {
      return new RecordReader<Text, NullWritable>() {
        private boolean done;

        @Override
        public void initialize(InputSplit s, TaskAttemptContext c) {}

        @Override
        public boolean nextKeyValue() {
          boolean first = !done;
          done = true;
          return first;
        }

        @Override
        public Text getCurrentKey() {
          return new Text(((NodeSplit) split).node);
        }

        @Override
        public NullWritable getCurrentValue() {
          return NullWritable.get();
        }

        @Override
        public float getProgress() {
          return done ? 1f : 0f;
        }

        @Override
        public void close() {}
      };
    }
  }

  /** A split that is only a node's name, and asks for it. */
  public static final class NodeSplit extends InputSplit implements Writable {
    String node;

    public NodeSplit() {}

    NodeSplit(String node) {
      this.node = node;
    }

    @Override
    public long getLength() {
      return 1;
    }

    @Override
    public String[] getLocations() {
      return new String[] {node};
    }

    @Override
    public void write(DataOutput out) throws IOException {
      Text.writeString(out, node);
    }

    @Override
    public void readFields(DataInput in) throws IOException {
      node = Text.readString(in);
    }
  }

  /** Starts the tasks' Python with --probe; fails, naming this node, unless it prints what was expected. */
  static final class Probe extends Mapper<Text, NullWritable, Text, NullWritable> {
    @Override
    protected void map(Text asked, NullWritable none, Context context) throws IOException, InterruptedException {
      Configuration conf = context.getConfiguration();
      InetAddress self = InetAddress.getLocalHost();
      String here = self.getHostName();
      ProcessBuilder builder = ParseJob.Texts.process(conf, "--probe");
      builder.redirectErrorStream(true);
      String python = builder.command().get(0);
      Process process;
      try {
        process = builder.start();
      } catch (IOException e) {
        throw new IOException("NodeManager " + here + " cannot start " + python + ", the Python the tasks' PEX "
            + "needs (" + ParseJob.PYTHON + ", --task-python): " + e.getMessage(), e);
      }
      process.getOutputStream().close();
      String said = read(process.getInputStream());
      int code = process.waitFor();
      String expect = conf.get(EXPECT);
      if (code != 0 || !said.startsWith(expect)) {
        String tail = said.length() > 4000 ? said.substring(said.length() - 4000) : said;
        throw new IOException("NodeManager " + here + ": the tasks' Python (" + python + " and the PEX) "
            + (code != 0 ? "exited with " + code : "made another probe fingerprint than the recipe's ("
            + expect.replace('\n', ' ').trim() + ")") + "; it said:\n" + tail);
      }
      // A NodeManager names itself by one or the other.
      context.write(new Text(here + "\t" + self.getCanonicalHostName()), NullWritable.get());
    }

    private static String read(InputStream in) throws IOException {
      ByteArrayOutputStream bytes = new ByteArrayOutputStream();
      byte[] buffer = new byte[8192];
      for (int n; (n = in.read(buffer)) > 0; ) {
        bytes.write(buffer, 0, n);
      }
      return new String(bytes.toByteArray(), StandardCharsets.UTF_8);
    }
  }
}
