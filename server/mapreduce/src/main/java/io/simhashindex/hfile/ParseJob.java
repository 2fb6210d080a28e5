package io.simhashindex.hfile;

import java.io.BufferedInputStream;
import java.io.BufferedReader;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.io.NullWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapreduce.InputSplit;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.JobContext;
import org.apache.hadoop.mapreduce.Mapper;
import org.apache.hadoop.mapreduce.RecordReader;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormat;
import org.apache.hadoop.mapreduce.lib.input.FileSplit;
import org.apache.hadoop.mapreduce.lib.output.MultipleOutputs;

/**
 * hfile-load's first job where the inputs live on a Hadoop FileSystem (hdfs://, file://, s3a://...): a map
 * task per input file streams the file's bytes to the project's own Python (simhash_server/bulk/file_task.py,
 * from a PEX in the distributed cache on YARN), which reads them with the same input layer and fingerprints
 * texts with the same recipe as on the submitting machine, and sends back normalised records and rejects.
 * Records become {@link Entry} sequence files for the docs job; rejects, lines of "input, line, reason, line
 * text", the named output {@value #REJECTS}.  The submitting JVM only lists the files.
 *
 * <p>A file is one split: its line numbers, its TSV/CSV fingerprint form and its compression are the
 * file's, as on the submitting machine.  A record's seq is (the file's place in the listing) x 2^40 + its
 * line, so the last line of a repeated id wins, in the order the inputs were given.
 */
final class ParseJob {
  private ParseJob() {}

  static final String PYTHON = "simhash.task.python"; // the NodeManagers' interpreter
  static final String ENV = "simhash.task.env"; // a PEX's link name in the task's directory; unset: -m
  static final String PEX_ROOT = "simhash.task.pex-root";
  static final String ARGS = "simhash.task.args"; // tab-separated, after the file name
  static final String REJECTS = "rejects";
  static final String LINK = "simhash-index.pex";
  private static final int FILE_SHIFT = 40; // lines per file below 2^40

  enum Counts { FILES, LINES, RECORDS, REJECTED, PYTHON_CPU_MILLISECONDS }

  /** The inputs, each expanded (a glob, a directory's files at any depth) and sorted, in the order given. */
  static final class Files extends FileInputFormat<LongWritable, Text> {
    @Override
    protected boolean isSplitable(JobContext context, Path file) {
      return false;
    }

    @Override
    protected List<FileStatus> listStatus(JobContext job) throws IOException {
      Configuration conf = job.getConfiguration();
      List<FileStatus> all = new ArrayList<>();
      for (Path input : getInputPaths(job)) {
        Job one = Job.getInstance(new Configuration(conf));
        FileInputFormat.setInputPaths(one, input);
        FileInputFormat.setInputDirRecursive(one, true);
        List<FileStatus> found = super.listStatus(one);
        found.sort(Comparator.comparing(status -> status.getPath().toString()));
        all.addAll(found);
      }
      return all;
    }

    @Override
    public List<InputSplit> getSplits(JobContext job) throws IOException {
      List<InputSplit> numbered = new ArrayList<>();
      long number = 0;
      for (InputSplit split : super.getSplits(job)) {
        FileSplit file = (FileSplit) split;
        numbered.add(new NumberedSplit(file.getPath(), file.getLength(), file.getLocations(), number++));
      }
      return numbered;
    }

    @Override
    public RecordReader<LongWritable, Text> createRecordReader(InputSplit split, TaskAttemptContext context) {
      return new OneFile();
    }
  }

  /** A file's split with its place in the listing. */
  public static final class NumberedSplit extends FileSplit {
    long number;

    public NumberedSplit() {}

    NumberedSplit(Path path, long length, String[] hosts, long number) {
      super(path, 0, length, hosts);
      this.number = number;
    }

    @Override
    public void write(java.io.DataOutput out) throws IOException {
      super.write(out);
      out.writeLong(number);
    }

    @Override
    public void readFields(java.io.DataInput in) throws IOException {
      super.readFields(in);
      number = in.readLong();
    }
  }

  /** One record per split: the file's number and path; the mapper reads the file itself. */
  static final class OneFile extends RecordReader<LongWritable, Text> {
    private NumberedSplit split;
    private boolean done;

    @Override
    public void initialize(InputSplit split, TaskAttemptContext context) {
      this.split = (NumberedSplit) split;
    }

    @Override
    public boolean nextKeyValue() {
      if (done) {
        return false;
      }
      done = true;
      return true;
    }

    @Override
    public LongWritable getCurrentKey() {
      return new LongWritable(split.number);
    }

    @Override
    public Text getCurrentValue() {
      return new Text(split.getPath().toString());
    }

    @Override
    public float getProgress() {
      return done ? 1f : 0f;
    }

    @Override
    public void close() {}
  }

  /** Streams a file through the Python task; writes its records and rejects. */
  static final class Texts extends Mapper<LongWritable, Text, NullWritable, Entry> {
    private MultipleOutputs<NullWritable, Entry> outputs;

    @Override
    protected void setup(Context context) {
      outputs = new MultipleOutputs<>(context);
    }

    @Override
    protected void cleanup(Context context) throws IOException, InterruptedException {
      outputs.close();
    }

    @Override
    protected void map(LongWritable number, Text value, Context context) throws IOException, InterruptedException {
      Configuration conf = context.getConfiguration();
      Path path = new Path(value.toString());
      ProcessBuilder builder = process(conf, path.toString());
      List<String> command = builder.command();
      String expect = conf.get(NodeCheck.EXPECT);
      if (expect != null) { // the node's Python must still make the recipe's probe (NodeCheck remembers nodes)
        command.add("--expect-probe");
        command.add(expect);
      }
      String node = java.net.InetAddress.getLocalHost().getHostName();
      Process process;
      try {
        process = builder.start();
      } catch (IOException e) {
        NodeCheck.forget(conf);
        throw new IOException("cannot start " + command.get(0) + " on NodeManager " + node + ": hfile-load's "
            + "tasks need the Python of their environment (" + PYTHON + ", --task-python): " + e.getMessage(), e);
      }
      Deque<String> stderr = new ArrayDeque<>();
      Thread errors = drain(process.getErrorStream(), stderr);
      Thread feeder = feed(path.getFileSystem(conf).open(path), process.getOutputStream());
      long base = number.get() << FILE_SHIFT;
      String name = path.toString();
      long[] end = null;
      Entry entry = new Entry();
      Text reject = new Text();
      try (DataInputStream in = new DataInputStream(new BufferedInputStream(process.getInputStream(), 1 << 20))) {
        for (long seen = 0; end == null; seen++) {
          int kind = in.read();
          if (kind < 0) {
            break;
          }
          if (kind == 'R') {
            entry.readNormalized(base + in.readLong(), in);
            context.write(NullWritable.get(), entry);
          } else if (kind == 'X') {
            long line = in.readLong();
            byte[] text = new byte[in.readInt()];
            in.readFully(text);
            reject.set(name + "\t" + line + "\t" + new String(text, StandardCharsets.UTF_8));
            outputs.write(REJECTS, NullWritable.get(), reject, REJECTS + "/part");
          } else if (kind == 'E') {
            end = new long[] {in.readLong(), in.readLong(), in.readLong(), in.readLong()};
          } else {
            throw new IOException("the Python task wrote an unknown frame " + kind + " for " + name);
          }
          if ((seen & 1023) == 0) {
            context.progress();
          }
        }
      } catch (EOFException cut) {
        end = null; // the Python task died inside a frame: reported below with its stderr
      }
      int code = process.waitFor();
      feeder.join();
      errors.join();
      if (code == NodeCheck.OTHER_PROBE && expect != null) {
        NodeCheck.forget(conf);
      }
      if (code != 0 || end == null) {
        throw new IOException("the Python task for " + name + " on NodeManager " + node + " "
            + (code != 0 ? "exited with " + code
            : "ended without reading the whole file") + "; its stderr ends:\n" + String.join("\n", stderr));
      }
      context.getCounter(Counts.FILES).increment(1);
      context.getCounter(Counts.LINES).increment(end[0]);
      context.getCounter(Counts.RECORDS).increment(end[1]);
      context.getCounter(Counts.REJECTED).increment(end[2]);
      context.getCounter(Counts.PYTHON_CPU_MILLISECONDS).increment(end[3]);
    }

    /** The tasks' Python (from the PEX, or -m here) for {@code name}, a file's name or --probe. */
    static ProcessBuilder process(Configuration conf, String name) {
      ProcessBuilder builder = new ProcessBuilder(command(conf, name));
      Map<String, String> env = builder.environment();
      if (conf.get(ENV) != null) {
        env.put("PEX_MODULE", "simhash_server.bulk.file_task");
        // Where the PEX unpacks itself: once per node and user, not once per task (its container's tmp).
        env.put("PEX_ROOT", conf.get(PEX_ROOT, "/tmp/simhash-index-pex-" + System.getProperty("user.name")));
      }
      return builder;
    }

    private static List<String> command(Configuration conf, String name) {
      List<String> command = new ArrayList<>();
      command.add(conf.get(PYTHON, "python3"));
      String pex = conf.get(ENV);
      if (pex != null) {
        command.add(pex);
      } else {
        command.add("-m");
        command.add("simhash_server.bulk.file_task");
      }
      command.add(name);
      String args = conf.get(ARGS, "");
      if (!args.isEmpty()) {
        for (String arg : args.split("\t")) {
          command.add(arg);
        }
      }
      return command;
    }
  }

  /** The file's bytes into the task's stdin, closed at the end (so Python sees the end of its input). */
  private static Thread feed(InputStream file, OutputStream stdin) {
    Thread thread = new Thread(() -> {
      byte[] buffer = new byte[1 << 16];
      try (InputStream in = file; OutputStream out = stdin) {
        for (int n; (n = in.read(buffer)) > 0; ) {
          out.write(buffer, 0, n);
        }
      } catch (IOException e) {
        // The Python side ended early (it reports why on stderr, and its exit status fails the task).
      }
    }, "simhash-feed");
    thread.setDaemon(true);
    thread.start();
    return thread;
  }

  /** The task's stderr into this task's log, its last lines kept for the failure message. */
  private static Thread drain(InputStream stderr, Deque<String> tail) {
    Thread thread = new Thread(() -> {
      try (BufferedReader in = new BufferedReader(new InputStreamReader(stderr, StandardCharsets.UTF_8))) {
        for (String line; (line = in.readLine()) != null; ) {
          System.err.println(line);
          synchronized (tail) {
            tail.addLast(line);
            if (tail.size() > 20) {
              tail.removeFirst();
            }
          }
        }
      } catch (IOException e) {
        // the process is gone
      }
    }, "simhash-stderr");
    thread.setDaemon(true);
    thread.start();
    return thread;
  }

  /** Moves the rejects the tasks wrote out of the job's output, to {@code target} (replaced). */
  static void publishRejects(FileSystem fs, Path output, Path target, Configuration conf) throws IOException {
    Path written = new Path(output, REJECTS);
    FileSystem targetFs = target.getFileSystem(conf);
    targetFs.delete(target, true);
    targetFs.mkdirs(target.getParent());
    if (!fs.exists(written)) {
      targetFs.mkdirs(target);
      return;
    }
    if (targetFs.getUri().equals(fs.getUri())) {
      if (!fs.rename(written, target)) {
        throw new IOException("could not move the rejects " + written + " to " + target);
      }
    } else {
      org.apache.hadoop.fs.FileUtil.copy(fs, written, targetFs, target, true, conf);
    }
  }
}
