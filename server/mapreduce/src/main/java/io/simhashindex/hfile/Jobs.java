package io.simhashindex.hfile;

import java.io.IOException;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hbase.mapreduce.TableMapReduceUtil;
import org.apache.hadoop.mapreduce.Counter;
import org.apache.hadoop.mapreduce.CounterGroup;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.MRConfig;
import org.apache.hadoop.mapreduce.MRJobConfig;
import org.apache.hadoop.mapreduce.TaskCompletionEvent;

/**
 * What the commands share: their "--name value" options, and running a job while reporting it as JSON lines
 * on stdout (progress each second, then its counters).  On YARN a job ships its jars with it, and is killed
 * if this JVM is stopped before it ends.
 */
final class Jobs {
  private Jobs() {}

  /**
   * Runs the command and exits with its status.  A failure's stack trace goes to stderr, then its messages
   * alone (each cause's), last: the lines the submitting command shows of the log.
   */
  static void exit(org.apache.hadoop.util.Tool tool, String[] args) {
    try {
      System.exit(org.apache.hadoop.util.ToolRunner.run(org.apache.hadoop.hbase.HBaseConfiguration.create(), tool,
          args));
    } catch (Throwable e) {
      e.printStackTrace();
      System.err.println("error: " + said(e));
      System.exit(1);
    }
  }

  /** A failure's messages, each cause's on a line of its own: what went wrong and why, without the frames. */
  static String said(Throwable e) {
    StringBuilder said = new StringBuilder();
    for (Throwable cause = e; cause != null; cause = cause.getCause()) {
      said.append(cause == e ? "" : "\n  caused by: ").append(cause.getMessage());
    }
    return said.toString();
  }

  /** The "--name value" pairs after the command (args[0]). */
  static Map<String, String> options(String[] args) {
    Map<String, String> opts = new HashMap<>();
    for (int i = 1; i + 1 < args.length; i += 2) {
      opts.put(args[i].replaceFirst("^--", ""), args[i + 1]);
    }
    return opts;
  }

  static String need(Map<String, String> opts, String name) {
    String value = opts.get(name);
    if (value == null) {
      throw new IllegalArgumentException("missing --" + name);
    }
    return value;
  }

  static boolean onYarn(Configuration conf) {
    return MRConfig.YARN_FRAMEWORK_NAME.equals(conf.get(MRConfig.FRAMEWORK_NAME));
  }

  /**
   * A directory on the job's filesystem that this user can write, or an IOException naming it: found before
   * any job is submitted, rather than as a task's failure.
   */
  static FileSystem writable(Path dir, Configuration conf) throws IOException {
    try {
      FileSystem fs = dir.getFileSystem(conf);
      fs.mkdirs(dir);
      Path probe = new Path(dir, ".write-probe");
      fs.create(probe, true).close();
      fs.delete(probe, false);
      return fs;
    } catch (IOException e) {
      throw new IOException("no write access to the staging directory " + dir + ": " + e.getMessage(), e);
    }
  }

  /** The input size (bytes) under which a YARN job runs as one uber task: {@link #small}. */
  static final String SMALL_INPUT = "simhash.small-input-bytes";

  /**
   * On YARN, a job whose input (the files ``inputs`` match) is under {@link #SMALL_INPUT} (32 MiB unless set)
   * runs as Hadoop's uber task: its maps, then one reducer, inside the application master's JVM.  The late
   * rounds of {@code clusters} are such jobs, and a container each for their maps and reducers cost more
   * than their work.  Returns whether it did.
   */
  static boolean small(Job job, Path... inputs) throws IOException {
    Configuration conf = job.getConfiguration();
    if (!onYarn(conf)) {
      return false;
    }
    long bytes = 0;
    for (Path input : inputs) {
      FileStatus[] files = input.getFileSystem(conf).globStatus(input);
      for (FileStatus file : files == null ? new FileStatus[0] : files) {
        bytes += file.getLen();
      }
    }
    if (bytes >= conf.getLong(SMALL_INPUT, 32L << 20)) {
      return false;
    }
    job.setNumReduceTasks(1); // an uber job has at most one reducer
    conf.setBoolean(MRJobConfig.JOB_UBERTASK_ENABLE, true);
    // Its tasks live in the master's container: Hadoop refuses the uber mode for tasks asking for more.
    int master = conf.getInt(MRJobConfig.MR_AM_VMEM_MB, MRJobConfig.DEFAULT_MR_AM_VMEM_MB);
    conf.setInt(MRJobConfig.MAP_MEMORY_MB, Math.min(conf.getInt(MRJobConfig.MAP_MEMORY_MB, master), master));
    conf.setInt(MRJobConfig.REDUCE_MEMORY_MB, Math.min(conf.getInt(MRJobConfig.REDUCE_MEMORY_MB, master), master));
    conf.setInt(MRJobConfig.IO_SORT_MB, Math.min(conf.getInt(MRJobConfig.IO_SORT_MB, 100), 64)); // one heap
    return true;
  }

  /** What a JVM that runs no hot loop of its own needs: C1 alone, one compiler thread, the serial collector. */
  static final String LIGHT_JVM = "-XX:TieredStopAtLevel=1 -XX:CICompilerCount=1 -XX:+UseSerialGC";

  /**
   * Adds {@link #LIGHT_JVM} to the JVM options {@code key} (a task's or the application master's), after the
   * cluster's own (its heap among them; a task's default, {@code mapred.child.java.opts}, where it sets none).
   */
  static void lightJvm(Configuration conf, String key) {
    String fallback = MRJobConfig.MAP_JAVA_OPTS.equals(key) ? conf.get("mapred.child.java.opts", "") : "";
    conf.set(key, (conf.get(key, fallback) + " " + LIGHT_JVM).trim());
  }

  /**
   * HBase's jars (with the pure-Java codecs the HFiles and map outputs use, and Agrona's collections) go with
   * a YARN job through the distributed cache, as HBase's own tools ship them (the cluster needs none
   * installed), each uploaded once for all jobs.  Under the cluster driver they are on the cluster already:
   * the driver's own class path ({@link Driver#JARS}), which the jobs get as it is.
   */
  static void ship(Job job) throws IOException {
    Configuration conf = job.getConfiguration();
    String[] shared = conf.getStrings(Driver.JARS);
    if (shared != null) {
      conf.unset("tmpjars"); // what configureIncrementalLoad found: the driver's localized copies
      for (String jar : shared) {
        job.addFileToClassPath(new Path(jar));
      }
      return;
    }
    TableMapReduceUtil.addDependencyJars(job);
    TableMapReduceUtil.addDependencyJarsForClasses(conf,
        org.apache.hadoop.hbase.io.compress.aircompressor.Lz4Codec.class, io.airlift.compress.lz4.Lz4Compressor.class,
        org.agrona.collections.Long2LongHashMap.class); // Center's collections
    SharedFiles.share(job);
  }

  static Job run(Job job, String phase, PrintStream out) throws Exception {
    runTogether(Collections.singletonList(job), Collections.singletonList(phase), out, index -> {});
    return job;
  }

  /** What to do once a job of {@link #runTogether} has succeeded (its index in the list). */
  interface Succeeded {
    void accept(int index) throws IOException;
  }

  /**
   * Jobs that do not read one another's output, submitted at once and waited for together: on YARN their
   * application masters start, and their last tasks run, side by side.  {@code succeeded} is told of each
   * job that succeeded as it ends (its progress and counters reported as {@link #run}'s); a failure is thrown
   * once every job has ended, so that the others' work is kept for a resumed run.
   */
  static void runTogether(List<Job> jobs, List<String> phases, PrintStream out, Succeeded succeeded)
      throws Exception {
    long started = System.nanoTime();
    for (Job job : jobs) {
      if (onYarn(job.getConfiguration())) {
        // An application master answers RPCs and schedules: C1 serves it as well as C2, for less CPU.
        lightJvm(job.getConfiguration(), MRJobConfig.MR_AM_COMMAND_OPTS);
        ship(job);
      }
    }
    // The hook is in place before the submissions start, and waits for one under way to end: a submitter
    // stopped while uploading its job's files must still kill what it submitted, not leave it running.
    Object submission = new Object();
    Thread killer = new Thread(() -> {
      synchronized (submission) {
        for (Job job : jobs) {
          try {
            if (job.getJobID() != null && !job.isComplete()) {
              job.killJob(); // the submitter was stopped: its job must not run on, half-owned
              System.err.println("killed " + job.getJobID());
            }
          } catch (IOException | IllegalStateException e) {
            System.err.println("could not kill " + job.getJobID() + ": " + e);
          }
        }
      }
    });
    Runtime.getRuntime().addShutdownHook(killer);
    synchronized (submission) {
      for (Job job : jobs) {
        job.submit();
      }
    }
    boolean[] ended = new boolean[jobs.size()];
    IOException failure = null;
    for (int left = jobs.size(); left > 0; ) {
      for (int i = 0; i < jobs.size(); i++) {
        Job job = jobs.get(i);
        String phase = phases.get(i);
        if (ended[i]) {
          continue;
        }
        if (!job.isComplete()) {
          out.printf(Locale.ROOT,
              "{\"event\": \"progress\", \"phase\": \"%s\", \"map\": %.3f, \"reduce\": %.3f}%n", phase,
              job.mapProgress(), job.reduceProgress());
          continue;
        }
        ended[i] = true;
        left--;
        if (!job.isSuccessful()) {
          String text = "the " + phase + " job (" + job.getJobID() + ") failed: " + job.getStatus().getFailureInfo();
          String task = failedTask(job);
          failure = failure != null ? failure : new IOException(task.isEmpty() ? text : text + "\n" + task);
          continue;
        }
        StringBuilder counters = new StringBuilder();
        for (CounterGroup group : job.getCounters()) {
          for (Counter counter : group) {
            if (counters.length() > 0) {
              counters.append(", ");
            }
            counters.append('"').append(counter.getName()).append("\": ").append(counter.getValue());
          }
        }
        out.printf(Locale.ROOT,
            "{\"event\": \"phase\", \"phase\": \"%s\", \"seconds\": %.3f, \"counters\": {%s}}%n", phase,
            (System.nanoTime() - started) / 1e9, counters);
        succeeded.accept(i);
      }
      if (left > 0) {
        Thread.sleep(pollMillis((System.nanoTime() - started) / 1_000_000,
            Job.getProgressPollInterval(jobs.get(0).getConfiguration())));
      }
    }
    Runtime.getRuntime().removeShutdownHook(killer);
    if (failure != null) {
      throw failure;
    }
  }

  /**
   * How long to wait before asking the jobs' status again, {@code waited} ms after they were submitted: Hadoop's
   * progress interval ({@code mapreduce.client.progressmonitor.pollinterval}, 1 s) at first, then a twentieth
   * of the wait, up to three intervals.  Each ask is an RPC to every running job's master, which this JVM
   * pays for as long as the jobs run; a step of minutes is not followed more closely for it.
   */
  static long pollMillis(long waited, long interval) {
    return Math.max(interval, Math.min(waited / 20, 3 * interval));
  }

  /** The last failed task attempt and the tail of what it reported (its exception), or "". */
  private static String failedTask(Job job) {
    try {
      String last = "";
      List<TaskCompletionEvent> events = new ArrayList<>();
      for (int from = 0; ; ) {
        TaskCompletionEvent[] batch = job.getTaskCompletionEvents(from, 100);
        if (batch.length == 0) {
          break;
        }
        events.addAll(Arrays.asList(batch));
        from += batch.length;
      }
      for (TaskCompletionEvent event : events) {
        if (event.getStatus() == TaskCompletionEvent.Status.FAILED
            || event.getStatus() == TaskCompletionEvent.Status.TIPFAILED) {
          String[] diagnostics = job.getTaskDiagnostics(event.getTaskAttemptId());
          String text = diagnostics.length == 0 ? "" : diagnostics[diagnostics.length - 1];
          // Its messages, not its stack frames: what the task said is wrong, and why.
          List<String> said = new ArrayList<>();
          for (String line : text.split("\n")) {
            String trimmed = line.trim();
            if (!trimmed.startsWith("at ") && !(trimmed.startsWith("...") && trimmed.endsWith("more"))) {
              said.add(line);
            }
          }
          last = "task " + event.getTaskAttemptId() + " failed:\n"
              + String.join("\n", said.subList(Math.max(0, said.size() - TAIL), said.size()));
        }
      }
      return last;
    } catch (IOException | InterruptedException e) {
      return "";
    }
  }

  private static final int TAIL = 20;
}
