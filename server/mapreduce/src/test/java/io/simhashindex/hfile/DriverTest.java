package io.simhashindex.hfile;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.StandardOpenOption;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapreduce.Job;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The submitter's side of the cluster driver, on Hadoop's local filesystem. */
class DriverTest {
  @TempDir java.nio.file.Path tmp;

  @Test
  void theSubmitterPrintsWholeLinesOnlyEachOnce() throws Exception {
    FileSystem fs = FileSystem.getLocal(new Configuration(false));
    java.nio.file.Path file = tmp.resolve("events.1");
    Path events = new Path(file.toUri());
    ByteArrayOutputStream printed = new ByteArrayOutputStream();
    PrintStream out = new PrintStream(printed, true, "UTF-8");

    assertEquals(0, Driver.relay(fs, events, 0, out)); // the master has written nothing yet
    Files.write(file, "{\"a\": 1}\n{\"b\": \"é\"}\n{\"c\"".getBytes(StandardCharsets.UTF_8));
    long offset = Driver.relay(fs, events, 0, out);
    assertEquals("{\"a\": 1}\n{\"b\": \"é\"}\n", printed.toString("UTF-8"));
    assertEquals("{\"a\": 1}\n{\"b\": \"é\"}\n".getBytes(StandardCharsets.UTF_8).length, offset);
    assertEquals(offset, Driver.relay(fs, events, offset, out)); // the half line waits
    Files.write(file, ": 3}\n".getBytes(StandardCharsets.UTF_8), StandardOpenOption.APPEND);
    Driver.relay(fs, events, offset, out);
    assertEquals("{\"a\": 1}\n{\"b\": \"é\"}\n{\"c\": 3}\n", printed.toString("UTF-8"));
  }

  @Test
  void underTheDriverJobsTakeItsClassPathAsItIs() throws Exception {
    Configuration conf = new Configuration(false);
    conf.setStrings(Driver.JARS, "file:/shared/a-1.jar", "file:/shared/b-2.jar");
    conf.set("fs.defaultFS", "file:///");
    conf.set("tmpjars", "file:/yarn/local/filecache/10/hbase-client-2.6.1-3.jar"); // configureIncrementalLoad's
    Job job = Job.getInstance(conf);
    Jobs.ship(job);
    Configuration shipped = job.getConfiguration();
    assertEquals(null, shipped.get("tmpjars"));
    assertEquals("file:/shared/a-1.jar,file:/shared/b-2.jar",
        shipped.get("mapreduce.job.classpath.files"));
  }
}
