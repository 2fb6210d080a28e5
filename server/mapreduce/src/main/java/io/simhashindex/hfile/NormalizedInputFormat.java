package io.simhashindex.hfile;

import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.util.Arrays;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.NullWritable;
import org.apache.hadoop.mapreduce.InputSplit;
import org.apache.hadoop.mapreduce.JobContext;
import org.apache.hadoop.mapreduce.RecordReader;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormat;
import org.apache.hadoop.mapreduce.lib.input.FileSplit;

/**
 * Reads the files `simhash-index hfile-load` writes after checking its input (simhash_server/bulk/hfile.py):
 * the magic "SHNORM2\n", then records of seq (8), fingerprint (8), indexed_at in epoch milliseconds (8, -1
 * for an undated record), id length (2), sketch length (2), all big-endian, then the id's UTF-8 bytes and
 * the sketch.  One split per file: Python writes as many files
 * as it wants map tasks.
 */
public final class NormalizedInputFormat extends FileInputFormat<NullWritable, Entry> {
  static final byte[] MAGIC = "SHNORM2\n".getBytes(java.nio.charset.StandardCharsets.US_ASCII);

  @Override
  protected boolean isSplitable(JobContext context, Path file) {
    return false;
  }

  @Override
  public RecordReader<NullWritable, Entry> createRecordReader(InputSplit split, TaskAttemptContext context) {
    return new Reader();
  }

  static final class Reader extends RecordReader<NullWritable, Entry> {
    private DataInputStream in;
    private FSDataInputStream raw;
    private long length;
    private Path path;
    private final Entry entry = new Entry();

    @Override
    public void initialize(InputSplit split, TaskAttemptContext context) throws IOException {
      FileSplit file = (FileSplit) split;
      path = file.getPath();
      FileSystem fs = path.getFileSystem(context.getConfiguration());
      raw = fs.open(path);
      length = file.getLength();
      in = new DataInputStream(new BufferedInputStream(raw, 1 << 20));
      byte[] magic = new byte[MAGIC.length];
      in.readFully(magic);
      if (!Arrays.equals(magic, MAGIC)) {
        throw new IOException(path + " is not a normalised hfile-load input of this version (bad magic): "
            + "remove the staging directory and load again");
      }
    }

    @Override
    public boolean nextKeyValue() throws IOException {
      long seq;
      try {
        seq = in.readLong();
      } catch (EOFException end) {
        return false;
      }
      try {
        entry.readNormalized(seq, in);
      } catch (EOFException truncated) {
        throw new IOException(path + " ends inside a record (seq " + seq + "): the file is truncated");
      }
      return true;
    }

    @Override
    public NullWritable getCurrentKey() {
      return NullWritable.get();
    }

    @Override
    public Entry getCurrentValue() {
      return entry;
    }

    @Override
    public float getProgress() throws IOException {
      return length == 0 ? 1f : Math.min(1f, raw.getPos() / (float) length);
    }

    @Override
    public void close() throws IOException {
      if (in != null) {
        in.close();
      }
    }
  }
}
