// Flush the memstores of the tables named by -Dtables=a,b,c (through the HBase Admin API), so their
// data is in store files: used to measure on-disk size and to end a --no-wal bulk load durably.
// With -Dcompact=true each table is then major-compacted, waiting until every region holds one store
// file (asking again a region that was already compacting): benchmarks compare layouts on the same footing.
// With -Dreload=true the servers first reread their hbase-site.xml (Admin.updateConfiguration): the launcher
// lifts its compaction throughput limit so for a forced major compaction, and puts it back after.
// The cluster is the one in the hbase-site.xml on the class path.
import java.util.ArrayList;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.CompactionState;
import org.apache.hadoop.hbase.client.ConnectionFactory;

try (var connection = ConnectionFactory.createConnection(HBaseConfiguration.create());
     var admin = connection.getAdmin()) {
    var compact = Boolean.getBoolean("compact");
    if (Boolean.getBoolean("reload")) {
        admin.updateConfiguration();
        System.out.println("reloaded");
    }
    for (var name : System.getProperty("tables").split(",")) {
        if (name.isEmpty()) continue;
        var table = TableName.valueOf(name);
        admin.flush(table);
        System.out.println("flushed " + name);
        if (!compact) continue;
        admin.majorCompact(table);
        while (true) {
            Thread.sleep(1000);
            var crowded = new ArrayList<byte[]>();  // regions still holding more than one store file
            for (var server : admin.getRegionServers()) {
                for (var region : admin.getRegionMetrics(server, table)) {
                    if (region.getStoreFileCount() > 1) crowded.add(region.getRegionName());
                }
            }
            if (admin.getCompactionState(table) != CompactionState.NONE) continue;
            if (crowded.isEmpty()) break;
            // Nothing compacting, yet files to merge: a region that was compacting when the request came
            // dropped it (a major compaction takes all of a store's files), so that region is asked again.
            for (var region : crowded) admin.majorCompactRegion(region);
            System.out.println("asked again: " + crowded.size() + " region(s) of " + name);
        }
        System.out.println("compacted " + name);
    }
} catch (Exception e) {
    System.out.println("FAILED " + e);
    System.exit(1);
}
/exit
