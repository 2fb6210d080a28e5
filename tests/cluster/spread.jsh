// Place the regions of the tables -Dtables=T1,T2,... on the region servers in turn (HBase's Admin.move), and
// wait until each is open where it was sent: a test's way to have a table on every region server, which
// the master's placement of a new table does not promise.  The cluster is the one in hbase-site.xml.
import java.util.Comparator;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.ConnectionFactory;

try (var connection = ConnectionFactory.createConnection(HBaseConfiguration.create());
     var admin = connection.getAdmin()) {
    var servers = admin.getRegionServers().stream().sorted(Comparator.comparing(s -> s.getHostname())).toList();
    var placed = 0;
    for (var name : System.getProperty("tables").split(",")) {
        var table = TableName.valueOf(name);
        var regions = admin.getRegions(table);
        for (var region : regions) {
            admin.move(region.getEncodedNameAsBytes(), servers.get(placed++ % servers.size()));
        }
        try (var locator = connection.getRegionLocator(table)) {
            for (var i = 0; i < 1200; i++) { // up to 4 minutes on a busy machine
                var hosts = locator.getAllRegionLocations().stream().map(l -> l.getServerName().getHostname())
                    .distinct().count();
                if (hosts == Math.min(servers.size(), regions.size()) && admin.isTableAvailable(table)
                    && locator.getAllRegionLocations().size() == regions.size()) {
                    break;
                }
                locator.clearRegionLocationCache();
                Thread.sleep(200);
            }
        }
        System.out.println("spread " + name + " " + regions.size());
    }
} catch (Exception e) {
    System.out.println("FAILED " + e);
    System.exit(1);
}
/exit
