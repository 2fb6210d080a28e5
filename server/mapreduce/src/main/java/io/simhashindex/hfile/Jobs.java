package io.simhashindex.hfile;

import java.io.IOException;
import java.io.PrintStream;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import org.apache.hadoop.mapreduce.Counter;
import org.apache.hadoop.mapreduce.CounterGroup;
import org.apache.hadoop.mapreduce.Job;

/**
 * What the commands share: their "--name value" options, and running a job while reporting it as JSON lines
 * on stdout (progress each second, then its counters).
 */
final class Jobs {
  private Jobs() {}

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

  static Job run(Job job, String phase, PrintStream out) throws Exception {
    long started = System.nanoTime();
    job.submit();
    while (!job.isComplete()) {
      out.printf(Locale.ROOT, "{\"event\": \"progress\", \"phase\": \"%s\", \"map\": %.3f, \"reduce\": %.3f}%n",
          phase, job.mapProgress(), job.reduceProgress());
      Thread.sleep(1000);
    }
    if (!job.isSuccessful()) {
      throw new IOException("the " + phase + " job failed: " + job.getStatus().getFailureInfo());
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
    out.printf(Locale.ROOT, "{\"event\": \"phase\", \"phase\": \"%s\", \"seconds\": %.3f, \"counters\": {%s}}%n",
        phase, (System.nanoTime() - started) / 1e9, counters);
    return job;
  }
}
