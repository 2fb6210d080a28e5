// Admin steps for bench_compaction.py, run in the order -Dops names them (comma-separated) on the tables
// -Dtables names (comma-separated), through HBase's Admin API; the cluster is the hbase-site.xml's on the
// class path.  Each step prints "done <step>" once it returned:
//   off, on   switch every region server's compactions off or on (Admin.compactionSwitch)
//   snapshot  flush each table and snapshot it as <table>_loaded, replacing an older snapshot of that name
//   restore   put each table back as its snapshot holds it (disable, restoreSnapshot, enable)
//   reload    make the servers reread hbase-site.xml (Admin.updateConfiguration): a new compaction
//             throughput controller, for compactions that start after it
//   compact   request a compaction of each table, as a bulk load's own request would
//   files     print "files <table> <regions> <store files> <compacted cells> <compacting cells>"
import java.util.List;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.ConnectionFactory;

try (var connection = ConnectionFactory.createConnection(HBaseConfiguration.create());
     var admin = connection.getAdmin()) {
    var tables = System.getProperty("tables").split(",");
    for (var op : System.getProperty("ops").split(",")) {
        if (op.equals("off") || op.equals("on")) {
            admin.compactionSwitch(op.equals("on"), List.of());
        } else if (op.equals("reload")) {
            admin.updateConfiguration();
        } else {
            for (var name : tables) {
                var table = TableName.valueOf(name);
                var snapshot = name + "_loaded";
                if (op.equals("snapshot")) {
                    admin.flush(table);
                    for (var old : admin.listSnapshots()) {
                        if (old.getName().equals(snapshot)) admin.deleteSnapshot(snapshot);
                    }
                    admin.snapshot(snapshot, table);
                } else if (op.equals("restore")) {
                    admin.disableTable(table);
                    admin.restoreSnapshot(snapshot);
                    admin.enableTable(table);
                } else if (op.equals("compact")) {
                    admin.compact(table);
                } else if (op.equals("files")) {
                    long regions = 0, files = 0, compacted = 0, compacting = 0;
                    for (var server : admin.getRegionServers()) {
                        for (var region : admin.getRegionMetrics(server, table)) {
                            regions += 1;
                            files += region.getStoreFileCount();
                            compacted += region.getCompactedCellCount();
                            compacting += region.getCompactingCellCount();
                        }
                    }
                    System.out.println("files " + name + " " + regions + " " + files + " " + compacted + " " + compacting);
                } else {
                    throw new IllegalArgumentException("unknown step " + op);
                }
            }
        }
        System.out.println("done " + op);
    }
} catch (Exception e) {
    System.out.println("FAILED " + e);
    System.exit(1);
}
/exit
