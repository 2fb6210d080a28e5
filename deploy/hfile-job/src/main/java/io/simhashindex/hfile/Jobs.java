package io.simhashindex.hfile;

import java.io.IOException;
import java.io.PrintStream;
import java.util.Locale;
import org.apache.hadoop.mapreduce.Counter;
import org.apache.hadoop.mapreduce.CounterGroup;
import org.apache.hadoop.mapreduce.Job;

/** Running a job and reporting it as JSON lines on stdout (progress each second, then its counters). */
final class Jobs {
  private Jobs() {}

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
