package io.simhashindex.hfile;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.io.SequenceFile;

/**
 * Clusters, the last step: the finished steps' files become the output directory ({@code clusters/},
 * {@code pairs/}, {@code sizes/}), and the largest prefix groups and clusters its two tables.
 */
final class Publish {
  private Publish() {}

  static void publish(Configuration conf, FileSystem fs, Path pairs, Path edges, Path join, Path label,
      Path output) throws IOException {
    fs.mkdirs(output);
    move(fs, ClustersMain.parts(label), new Path(output, "clusters"), "");
    move(fs, new Path(label, LabelJob.SIZES + "/part*"), new Path(output, "sizes"), "");
    move(fs, new Path(edges, JoinJob.PAIRS + "/part*"), new Path(output, "pairs"), "");
    // verifying: the pairs of documents sharing one fingerprint
    move(fs, new Path(join, JoinJob.PAIRS + "/part*"), new Path(output, "pairs"), "-same-fingerprint");
    List<String[]> groups = new ArrayList<>();
    BytesWritable prefix = new BytesWritable();
    LongWritable size = new LongWritable();
    for (FileStatus file : glob(fs, new Path(pairs, PairsJob.LARGEST + "/part*"))) {
      try (SequenceFile.Reader reader = new SequenceFile.Reader(conf, SequenceFile.Reader.file(file.getPath()))) {
        while (reader.next(prefix, size)) {
          StringBuilder hex = new StringBuilder();
          for (int i = 0; i < 4; i++) {
            hex.append(String.format(Locale.ROOT, "%02x", prefix.getBytes()[i] & 0xff));
          }
          groups.add(new String[] {hex.toString(), Integer.toString(prefix.getBytes()[4]), Long.toString(size.get())});
        }
      }
    }
    writeLargest(fs, new Path(output, "largest-groups.tsv"), "drawer value\tflag\tfingerprints", groups);
    List<String[]> clusters = new ArrayList<>();
    for (FileStatus file : glob(fs, new Path(label, LabelJob.LARGEST + "/part*"))) {
      try (BufferedReader in = new BufferedReader(new InputStreamReader(fs.open(file.getPath()),
          StandardCharsets.UTF_8))) {
        for (String line; (line = in.readLine()) != null; ) {
          clusters.add(line.split("\t"));
        }
      }
    }
    writeLargest(fs, new Path(output, "largest-clusters.tsv"), "cluster id\tdocuments", clusters);
  }

  static FileStatus[] glob(FileSystem fs, Path pattern) throws IOException {
    FileStatus[] found = fs.globStatus(pattern);
    return found == null ? new FileStatus[0] : found;
  }

  private static void move(FileSystem fs, Path pattern, Path into, String suffix) throws IOException {
    fs.mkdirs(into);
    for (FileStatus file : glob(fs, pattern)) {
      if (!fs.rename(file.getPath(), new Path(into, file.getPath().getName() + suffix))) {
        throw new IOException("could not move " + file.getPath() + " into " + into);
      }
    }
  }

  /** The largest entries (last column: the size), largest first, at most {@link PairsJob#KEPT_LARGEST}. */
  private static void writeLargest(FileSystem fs, Path file, String header, List<String[]> rows)
      throws IOException {
    rows.sort((x, y) -> Long.compare(Long.parseLong(y[y.length - 1]), Long.parseLong(x[x.length - 1])));
    StringBuilder text = new StringBuilder(header).append('\n');
    for (String[] row : rows.subList(0, Math.min(rows.size(), PairsJob.KEPT_LARGEST))) {
      text.append(String.join("\t", row)).append('\n');
    }
    try (OutputStream o = fs.create(file, true)) {
      o.write(text.toString().getBytes(StandardCharsets.UTF_8));
    }
  }
}
