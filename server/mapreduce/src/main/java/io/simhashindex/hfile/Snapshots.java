package io.simhashindex.hfile;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import java.util.zip.CRC32;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hbase.HRegionInfo;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.mapreduce.TableSnapshotInputFormatImpl;
import org.apache.hadoop.hbase.snapshot.SnapshotManifest;
import org.apache.hadoop.hbase.util.Bytes;
import org.apache.hadoop.hbase.util.CommonFSUtils;

/**
 * The clusters job's snapshot read ({@code --read snapshot}): HBase snapshots of the drawers and fp2docs
 * tables, read by {@code TableSnapshotInputFormat} straight from their files on the cluster's filesystem, so
 * the job's one pass over 10 rows per fingerprint goes through no region server that answers queries.
 *
 * <p>A snapshot's name comes from its table and the work directory, so a rerun of a stopped job reads the
 * same snapshots; they are deleted once the job has published its output (until then they hold their
 * files on disk).  The region servers serve regions whatever their boundaries, but a map task of a snapshot
 * reads its one region: a region boundary inside a drawer prefix group would cut the group and lose its
 * pairs across the cut, so such a drawers table is refused here (the scan read, which reads on past a
 * region's end, handles it).  Tables made by {@code schema apply} split only between prefix groups.
 */
final class Snapshots {
  private Snapshots() {}

  /** The snapshot name for {@code table} in a run whose work directory is {@code work}. */
  static String name(String table, Path work) {
    CRC32 crc = new CRC32();
    crc.update(work.toUri().toString().getBytes(StandardCharsets.UTF_8));
    return table.replace(':', '_') + "-clusters-" + Long.toHexString(crc.getValue());
  }

  /** Where snapshots are restored for reading: beside the HBase root directory, on its filesystem. */
  static Path restoreDir(Configuration conf, Path work, String given) throws IOException {
    if (given != null) {
      return new Path(given);
    }
    Path root = CommonFSUtils.getRootDir(conf);
    return new Path(root.getParent() == null ? root : root.getParent(), "simhash-restore/" + name("run", work));
  }

  /** Take (again) the snapshot of each table, then check the drawers' regions (none kept if refused). */
  static void take(Configuration conf, String drawers, String fp2docs, Path work) throws IOException {
    try (Connection connection = ConnectionFactory.createConnection(conf); Admin admin = connection.getAdmin()) {
      for (String table : new String[] {drawers, fp2docs}) {
        String snapshot = name(table, work);
        if (exists(admin, snapshot)) {
          admin.deleteSnapshot(snapshot); // a stopped earlier run's, taken before its step was marked done
        }
        admin.snapshot(snapshot, TableName.valueOf(table));
      }
      try {
        checkBoundaries(conf, name(drawers, work));
      } catch (IOException refused) {
        deleteSnapshots(admin, work, drawers, fp2docs);
        throw refused;
      }
    }
  }

  private static void deleteSnapshots(Admin admin, Path work, String... tables) throws IOException {
    for (String table : tables) {
      String snapshot = name(table, work);
      if (exists(admin, snapshot)) {
        admin.deleteSnapshot(snapshot);
      }
    }
  }

  private static boolean exists(Admin admin, String snapshot) throws IOException {
    return !admin.listSnapshots(Pattern.compile(Pattern.quote(snapshot))).isEmpty();
  }

  /** Refuse a drawers snapshot with a region boundary inside a prefix group. */
  static void checkBoundaries(Configuration conf, String snapshot) throws IOException {
    Path root = CommonFSUtils.getRootDir(conf);
    SnapshotManifest manifest;
    try {
      manifest = TableSnapshotInputFormatImpl.getSnapshotManifest(conf, snapshot, root, root.getFileSystem(conf));
    } catch (IOException e) {
      throw new IOException("snapshot " + snapshot + " is not under the HBase root directory " + root
          + " this job was given: give the cluster's hbase.rootdir (its hbase-site.xml, or -D hbase.rootdir=URI): "
          + e.getMessage(), e);
    }
    List<String> cuts = new ArrayList<>();
    for (HRegionInfo region : TableSnapshotInputFormatImpl.getRegionInfosFromManifest(manifest)) {
      if (cutsGroup(region.getStartKey())) {
        cuts.add(Bytes.toStringBinary(region.getStartKey()));
      }
    }
    if (!cuts.isEmpty()) {
      throw new IOException("the drawers table has " + cuts.size() + " region boundaries inside a prefix group "
          + "(first " + cuts.get(0) + "), which a snapshot read would cut: read with --read scan");
    }
  }

  /** Whether a region starting at {@code key} splits the rows of one 5-byte drawer prefix. */
  static boolean cutsGroup(byte[] key) {
    for (int i = Codec.PREFIX; i < key.length; i++) {
      if (key[i] != 0) {
        return true;
      }
    }
    return false;
  }

  /** Delete the run's snapshots and restored files (after success). */
  static void drop(Configuration conf, String drawers, String fp2docs, Path work, Path restore) throws IOException {
    try (Connection connection = ConnectionFactory.createConnection(conf); Admin admin = connection.getAdmin()) {
      deleteSnapshots(admin, work, drawers, fp2docs);
    }
    FileSystem fs = restore.getFileSystem(conf);
    fs.delete(restore, true);
  }
}
