package io.simhashindex.hfile;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.io.NullWritable;
import org.apache.hadoop.io.SequenceFile;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.lib.output.FileOutputFormat;
import org.apache.hadoop.mapreduce.lib.output.SequenceFileOutputFormat;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The centres' roots step: each verified link leaves with its component's root, read before its links. */
class RootsStepTest {
  @TempDir java.nio.file.Path tmp;

  private static byte[] bytes(GroupKey key) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    key.write(new DataOutputStream(out));
    return out.toByteArray();
  }

  private static int compare(org.apache.hadoop.io.WritableComparator order, GroupKey x, GroupKey y)
      throws IOException {
    byte[] a = bytes(x);
    byte[] b = bytes(y);
    return Integer.signum(order.compare(a, 0, a.length, b, 0, b.length));
  }

  @Test
  void aNodesRootRecordSortsBeforeItsLinksAndOneCallGetsBoth() throws IOException {
    GroupKey.Comparator sort = new GroupKey.Comparator();
    GroupKey.ByGroup group = new GroupKey.ByGroup();
    GroupKey root = new GroupKey(5, GroupKey.FIRST);
    GroupKey link = new GroupKey(5, GroupKey.THEN);
    assertEquals(-1, compare(sort, root, link));
    assertEquals(1, compare(sort, link, root));
    assertEquals(0, compare(group, root, link));
    assertEquals(-1, compare(sort, new GroupKey(4, GroupKey.THEN), root)); // by node first
    assertEquals(-1, compare(group, new GroupKey(-3, GroupKey.THEN), root));
    assertEquals(root.compareTo(link), compare(sort, root, link)); // the object order agrees
  }

  private static Link link(long a, long b, double similarity) {
    return Link.of(a, ("d" + a).getBytes(StandardCharsets.UTF_8), b, ("d" + b).getBytes(StandardCharsets.UTF_8),
        similarity);
  }

  @Test
  void everyLinkOfAHubLeavesWithItsComponentsRoot() throws Exception {
    Configuration conf = new Configuration();
    conf.set("mapreduce.framework.name", "local");
    conf.set("fs.defaultFS", "file:///");
    FileSystem fs = FileSystem.getLocal(conf);
    Path dir = new Path(tmp.toUri());
    Path stars = new Path(dir, "stars");
    Path links = new Path(dir, "links");
    // Component 1: nodes 1..hub + 1, node 2 a hub linked to all of them; component C: nodes C..C + 3.  Ids "d<n>"
    // order the ends, so a link's first end is not always the smaller node.
    final int hub = 20_000;
    final long C = 1_000_000;
    Map<Long, Long> rootOf = new HashMap<>();
    try (SequenceFile.Writer w = SequenceFile.createWriter(conf, SequenceFile.Writer.file(new Path(stars, "part-0")),
        SequenceFile.Writer.keyClass(LongWritable.class), SequenceFile.Writer.valueClass(LongWritable.class))) {
      for (long n = 2; n <= hub + 1; n++) {
        w.append(new LongWritable(n), new LongWritable(1));
        rootOf.put(n, 1L);
      }
      for (long n = C + 1; n <= C + 3; n++) {
        w.append(new LongWritable(n), new LongWritable(C));
        rootOf.put(n, C);
      }
    }
    rootOf.put(1L, 1L);
    rootOf.put(C, C);
    int written = 0;
    try (SequenceFile.Writer w = SequenceFile.createWriter(conf, SequenceFile.Writer.file(new Path(links, "part-0")),
        SequenceFile.Writer.keyClass(Link.class), SequenceFile.Writer.valueClass(NullWritable.class))) {
      for (long n = 1; n <= hub + 1; n++) {
        if (n != 2) {
          w.append(link(2, n, 0.8 + (n % 7) / 100.0), NullWritable.get());
          written++;
        }
      }
      for (long[] e : new long[][] {{C, C + 1}, {C + 1, C + 2}, {C + 3, C + 2}, {1, 3}}) {
        w.append(link(e[0], e[1], 0.9), NullWritable.get());
        written++;
      }
    }

    Job job = Job.getInstance(conf, "roots");
    CentresJob.roots(job, new Path(stars, "part-*"), new Path[] {new Path(links, "part-*")});
    job.setNumReduceTasks(2);
    job.setOutputFormatClass(SequenceFileOutputFormat.class);
    Path out = new Path(dir, "rooted");
    FileOutputFormat.setOutputPath(job, out);
    assertTrue(job.waitForCompletion(false));

    int read = 0;
    Link got = new Link();
    for (org.apache.hadoop.fs.FileStatus part : fs.globStatus(new Path(out, "part-*"))) {
      try (SequenceFile.Reader r = new SequenceFile.Reader(conf, SequenceFile.Reader.file(part.getPath()))) {
        while (r.next(got, NullWritable.get())) {
          assertEquals((long) rootOf.get(got.a), got.root, "link " + got.a + "-" + got.b);
          assertEquals((long) rootOf.get(got.b), got.root, "link " + got.a + "-" + got.b);
          read++;
        }
      }
    }
    assertEquals(written, read);
  }
}
