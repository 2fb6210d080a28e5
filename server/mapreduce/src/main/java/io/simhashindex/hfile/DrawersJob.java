package io.simhashindex.hfile;

import java.io.IOException;
import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.KeyValue;
import org.apache.hadoop.hbase.io.ImmutableBytesWritable;
import org.apache.hadoop.io.NullWritable;
import org.apache.hadoop.mapreduce.Mapper;
import org.apache.hadoop.mapreduce.Reducer;

/**
 * Job 2 of 3: the drawers table's HFiles, 10 rows per distinct fingerprint, and with {@link #PART_ROWS}
 * (recipe v7) 10 part rows per document's first stored part (simhash_server/index/keys.py).  A drawer row
 * carries its meaning in its key, so the shuffle moves bare keys (NullWritable values); the reducer makes
 * the one empty cell of each row, once however many documents share it.  (A combiner cost more than it
 * saved on inputs of mostly distinct fingerprints.)
 */
final class DrawersJob {
  static final String PART_ROWS = "simhash.part.rows";

  private DrawersJob() {}

  static final class Keys extends Mapper<NullWritable, Entry, ImmutableBytesWritable, NullWritable> {
    private final ImmutableBytesWritable key = new ImmutableBytesWritable();
    private boolean partRows;

    @Override
    protected void setup(Context context) {
      partRows = context.getConfiguration().getBoolean(PART_ROWS, false);
    }

    @Override
    protected void map(NullWritable ignored, Entry entry, Context context) throws IOException, InterruptedException {
      for (int flag = 0; flag < Codec.drawers(); flag++) {
        key.set(Codec.drawerKey(entry.fp, flag));
        context.write(key, NullWritable.get());
      }
      long[] parts = partRows ? Sketches.parts(entry.sketch) : new long[0];
      if (parts.length > 0) {
        for (int flag = 0; flag < Codec.drawers(); flag++) {
          key.set(Codec.partRowKey(parts[0], entry.fp, flag));
          context.write(key, NullWritable.get());
        }
      }
    }
  }

  static final class Cells extends Reducer<ImmutableBytesWritable, NullWritable, ImmutableBytesWritable, Cell> {
    private long timestamp;

    @Override
    protected void setup(Context context) {
      timestamp = context.getConfiguration().getLong(DocsJob.TIMESTAMP, -1);
    }

    @Override
    protected void reduce(ImmutableBytesWritable key, Iterable<NullWritable> ignored, Context context)
        throws IOException, InterruptedException {
      byte[] row = key.copyBytes();
      context.write(key, new KeyValue(row, Codec.FAMILY, Codec.DRAWER_QUALIFIER, timestamp, Codec.EMPTY));
    }
  }
}
