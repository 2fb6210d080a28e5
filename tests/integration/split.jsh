// Split the table -Dtable=T at the row key -Dkey=HEX (HBase's Admin.split), and wait until the region
// holding the key starts exactly there: a test's way to get a region boundary inside a drawer prefix
// group, as HBase's own size-based splits can make.  The cluster is the one in hbase-site.xml.
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.util.Bytes;

try (var connection = ConnectionFactory.createConnection(HBaseConfiguration.create());
     var admin = connection.getAdmin()) {
    var table = TableName.valueOf(System.getProperty("table"));
    var key = Bytes.fromHex(System.getProperty("key"));
    admin.split(table, key);
    for (var i = 0; i < 1200; i++) { // up to 4 minutes: a split on a busy machine
        var starts = admin.getRegions(table).stream().anyMatch(r -> Bytes.equals(r.getStartKey(), key));
        if (starts && admin.isTableAvailable(table)) {
            System.out.println("split " + admin.getRegions(table).size());
            break;
        }
        Thread.sleep(200);
    }
} catch (Exception e) {
    System.out.println("FAILED " + e);
    System.exit(1);
}
/exit
