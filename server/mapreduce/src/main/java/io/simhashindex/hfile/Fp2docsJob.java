package io.simhashindex.hfile;

import java.io.IOException;
import org.apache.hadoop.hbase.KeyValue;
import org.apache.hadoop.hbase.io.ImmutableBytesWritable;
import org.apache.hadoop.io.NullWritable;
import org.apache.hadoop.mapreduce.Mapper;

/**
 * Job 3 of 3: the fp2docs table's HFiles, one column d:&lt;doc id&gt; per document in its fingerprint's row,
 * valued by its sketch, at the timestamp the docs job gave the document.  HBase's own CellSortReducer
 * orders a row's columns; it holds one row's cells in memory, so a fingerprint shared by millions of
 * documents costs heap in proportion (docs/operations.md).
 */
final class Fp2docsJob {
  private Fp2docsJob() {}

  static final class Columns extends Mapper<NullWritable, Entry, ImmutableBytesWritable, KeyValue> {
    private final ImmutableBytesWritable key = new ImmutableBytesWritable();

    @Override
    protected void map(NullWritable ignored, Entry entry, Context context) throws IOException, InterruptedException {
      byte[] row = Codec.fingerprintRow(entry.fp);
      key.set(row);
      context.write(key, new KeyValue(row, Codec.FAMILY, entry.id, entry.stamp, entry.sketch));
    }
  }
}
