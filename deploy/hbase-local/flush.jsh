// Flush the memstores of the tables named by -Dtables=a,b,c (through the HBase Admin API), so their
// data is in store files: used to measure on-disk size and to end a --no-wal bulk load durably.
// The cluster is the one in the hbase-site.xml on the class path.
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.ConnectionFactory;

try (var connection = ConnectionFactory.createConnection(HBaseConfiguration.create());
     var admin = connection.getAdmin()) {
    for (var name : System.getProperty("tables").split(",")) {
        admin.flush(TableName.valueOf(name));
        System.out.println("flushed " + name);
    }
} catch (Exception e) {
    System.out.println("FAILED " + e);
    System.exit(1);
}
/exit
