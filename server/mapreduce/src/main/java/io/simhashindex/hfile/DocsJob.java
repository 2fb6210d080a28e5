package io.simhashindex.hfile;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.KeyValue;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.ResultScanner;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.filter.MultiRowRangeFilter;
import org.apache.hadoop.hbase.util.Bytes;
import org.apache.hadoop.hbase.io.ImmutableBytesWritable;
import org.apache.hadoop.io.NullWritable;
import org.apache.hadoop.mapreduce.Mapper;
import org.apache.hadoop.mapreduce.Reducer;
import org.apache.hadoop.mapreduce.lib.output.MultipleOutputs;

/**
 * Job 1 of 3: the docs table's HFiles, keyed by document id, which is where repeated ids meet: the record
 * of the highest input position wins (as with repeated Index calls).  Side outputs: "winners" (one entry per
 * document, the input of the drawers and fp2docs jobs) and "moves" (documents already stored at another
 * fingerprint, whose old fp2docs column the load deletes first).  Consulting the docs table is what makes
 * HFiles right for ids already present; `--new-ids-only` skips it.
 *
 * <p>Each document's cells (docs and fp2docs) carry one timestamp ({@link #stampOf}): the load's, or for a
 * dated record (indexed_at) its date, moved past every cell and delete marker its docs row holds, so that no
 * older write or delete hides it (bulk-load's rule, simhash_server/index/writes.py doc_stamps).  Drawer
 * rows keep the load's timestamp, which no document's passes.
 */
final class DocsJob {
  static final String CONSULT = "simhash.hfile.consult";
  static final String DOCS_TABLE = "simhash.hfile.docs.table";
  static final String TIMESTAMP = "simhash.hfile.timestamp";
  static final String WINNERS = "winners";
  static final String MOVES = "moves";

  enum Counts {
    RECORDS,
    DOCUMENTS,
    REPEATED_IDS,
    PRESENT_SAME_FINGERPRINT,
    MOVED
  }

  private DocsJob() {}

  /**
   * The timestamp of a document's cells: the load's ({@code load}) for an undated record ({@code seen} -1);
   * else its date, or one past the newest cell or delete marker of its docs row ({@code newest}, -1 for none)
   * when that is later.  Never past the load's: a row written after the load began was written by a live
   * writer, which wins over the load, dated or not.
   */
  static long stampOf(long seen, long newest, long load) {
    if (seen < 0) {
      return load;
    }
    return Math.min(load, Math.max(seen, newest < 0 ? 0 : newest + 1));
  }

  static final class ById extends Mapper<NullWritable, Entry, ImmutableBytesWritable, Entry> {
    private final ImmutableBytesWritable key = new ImmutableBytesWritable();

    @Override
    protected void map(NullWritable ignored, Entry entry, Context context) throws IOException, InterruptedException {
      key.set(entry.id);
      context.getCounter(Counts.RECORDS).increment(1);
      context.write(key, entry);
    }
  }

  static final class LastWins extends Reducer<ImmutableBytesWritable, Entry, ImmutableBytesWritable, Cell> {
    private static final int BATCH = 1000;
    private MultipleOutputs<ImmutableBytesWritable, Cell> sides;
    private long timestamp;
    private Connection connection;
    private Table docs;
    private final List<Entry> pending = new ArrayList<>();

    @Override
    protected void setup(Context context) throws IOException {
      Configuration conf = context.getConfiguration();
      sides = new MultipleOutputs<>(context);
      timestamp = conf.getLong(TIMESTAMP, -1);
      if (timestamp < 0) {
        throw new IOException(TIMESTAMP + " is not set");
      }
      if (conf.getBoolean(CONSULT, true)) {
        connection = ConnectionFactory.createConnection(conf);
        docs = connection.getTable(TableName.valueOf(conf.get(DOCS_TABLE)));
      }
    }

    @Override
    protected void reduce(ImmutableBytesWritable id, Iterable<Entry> entries, Context context)
        throws IOException, InterruptedException {
      Entry last = new Entry();
      long seen = 0;
      for (Entry entry : entries) {
        if (seen++ == 0 || entry.seq > last.seq) {
          last.copyFrom(entry);
        }
      }
      context.getCounter(Counts.DOCUMENTS).increment(1);
      context.getCounter(Counts.REPEATED_IDS).increment(seen - 1);
      pending.add(last);
      if (pending.size() >= BATCH) {
        flush(context);
      }
    }

    @Override
    protected void cleanup(Context context) throws IOException, InterruptedException {
      try {
        flush(context);
      } finally {
        sides.close();
        if (docs != null) {
          docs.close();
          connection.close();
        }
      }
    }

    /** Consult the docs table for the pending documents, then write them in key order. */
    private void flush(Context context) throws IOException, InterruptedException {
      if (pending.isEmpty()) {
        return;
      }
      Result[] stored = null;
      if (docs != null) {
        List<Get> gets = new ArrayList<>(pending.size());
        for (Entry entry : pending) {
          gets.add(new Get(entry.id).addColumn(Codec.FAMILY, Codec.FP_QUALIFIER));
        }
        stored = docs.get(gets);
      }
      TreeMap<byte[], Long> newest = docs == null ? new TreeMap<>(Bytes.BYTES_COMPARATOR) : newest(pending);
      ImmutableBytesWritable key = new ImmutableBytesWritable();
      for (int n = 0; n < pending.size(); n++) {
        Entry entry = pending.get(n);
        entry.stamp = stampOf(entry.seen, newest.getOrDefault(entry.id, -1L), timestamp);
        byte[] old = stored == null ? null : stored[n].getValue(Codec.FAMILY, Codec.FP_QUALIFIER);
        if (old != null) {
          long oldFp = Codec.fingerprintOf(old);
          if (oldFp == entry.fp) {
            context.getCounter(Counts.PRESENT_SAME_FINGERPRINT).increment(1);
          } else {
            Entry move = new Entry();
            move.copyFrom(entry);
            move.fp = oldFp;
            sides.write(MOVES, NullWritable.get(), move, MOVES + "/part");
            context.getCounter(Counts.MOVED).increment(1);
          }
        }
        key.set(entry.id);
        KeyValue cell =
            new KeyValue(entry.id, Codec.FAMILY, Codec.FP_QUALIFIER, entry.stamp, Codec.fingerprintRow(entry.fp));
        context.write(key, cell);
        sides.write(WINNERS, NullWritable.get(), entry, WINNERS + "/part");
      }
      pending.clear();
    }

    /**
     * The newest timestamp of any cell or delete marker in the docs rows of the dated documents among
     * {@code entries}: one raw scan of all versions over their rows (the reducer's keys come sorted).
     */
    private TreeMap<byte[], Long> newest(List<Entry> entries) throws IOException {
      TreeMap<byte[], Long> newest = new TreeMap<>(Bytes.BYTES_COMPARATOR);
      List<MultiRowRangeFilter.RowRange> rows = new ArrayList<>();
      for (Entry entry : entries) {
        if (entry.seen >= 0) {
          rows.add(new MultiRowRangeFilter.RowRange(entry.id, true, entry.id, true));
        }
      }
      if (rows.isEmpty()) {
        return newest;
      }
      Scan scan = new Scan().setRaw(true).readAllVersions().addFamily(Codec.FAMILY).setCaching(BATCH);
      scan.setFilter(new MultiRowRangeFilter(rows));
      try (ResultScanner scanner = docs.getScanner(scan)) {
        for (Result row : scanner) {
          long most = -1;
          for (Cell cell : row.rawCells()) {
            most = Math.max(most, cell.getTimestamp());
          }
          newest.put(row.getRow(), most);
        }
      }
      return newest;
    }
  }
}
