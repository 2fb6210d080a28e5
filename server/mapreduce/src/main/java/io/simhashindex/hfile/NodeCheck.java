package io.simhashindex.hfile;

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.DataInput;
import java.io.DataOutput;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
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
 * task writes the node it ran on.  It costs one short job per load, against the parse job's many minutes.
 */
final class NodeCheck {
  private NodeCheck() {}

  static final String EXPECT = "simhash.check.expect"; // the recipe's probe fingerprint and sketch lines
  static final String NODES = "simhash.check.nodes"; // comma-separated

  /** Runs the check for {@code parse}'s settings (its PEX and Python); returns the nodes it could not. */
  static List<String> run(Job parse, String expect, Path staging, PrintStream out) throws Exception {
    Configuration conf = new Configuration(parse.getConfiguration());
    List<String> nodes = runningNodes(conf);
    Job job = Job.getInstance(conf, "simhash-index hfile-load: check the NodeManagers");
    conf = job.getConfiguration();
    conf.set(EXPECT, expect);
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
    List<String> unchecked = new ArrayList<>();
    for (String node : nodes) {
      if (!checked.contains(node)) {
        unchecked.add(node);
      }
    }
    out.println("{\"event\": \"checked\", \"nodes\": " + (nodes.size() - unchecked.size())
        + ", \"unchecked\": \"" + String.join(",", unchecked) + "\"}");
    return unchecked;
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
