package io.simhashindex.hfile;

import java.io.DataInput;
import java.io.DataOutput;
import java.io.IOException;
import org.apache.hadoop.io.WritableComparable;
import org.apache.hadoop.io.WritableComparator;
import org.apache.hadoop.mapreduce.Partitioner;

/**
 * The roots step's key ({@link CentresJob}): a node, then {@link #ROOT} for the record of its component's
 * root or {@link #LINK} for one of its links.  Sorted by node, then root record first, and grouped by node
 * only ({@link ByNode}), so a reduce call meets the node's root before its links and passes each link on as
 * it comes: a node with millions of links holds none of them.
 */
public final class NodeKey implements WritableComparable<NodeKey> {
  static final byte ROOT = 0;
  static final byte LINK = 1;
  long node;
  byte kind = LINK;

  public NodeKey() {}

  NodeKey(long node, byte kind) {
    this.node = node;
    this.kind = kind;
  }

  @Override
  public void write(DataOutput out) throws IOException {
    out.writeLong(node);
    out.writeByte(kind);
  }

  @Override
  public void readFields(DataInput in) throws IOException {
    node = in.readLong();
    kind = in.readByte();
  }

  @Override
  public int compareTo(NodeKey o) {
    int c = Long.compare(node, o.node);
    return c != 0 ? c : Byte.compare(kind, o.kind);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof NodeKey && compareTo((NodeKey) o) == 0;
  }

  @Override
  public int hashCode() {
    return Long.hashCode(node);
  }

  /** The sort order, on the serialised bytes: node, then kind. */
  public static final class Comparator extends WritableComparator {
    public Comparator() {
      super(NodeKey.class);
    }

    @Override
    public int compare(byte[] b1, int s1, int l1, byte[] b2, int s2, int l2) {
      int c = Long.compare(readLong(b1, s1), readLong(b2, s2));
      return c != 0 ? c : Byte.compare(b1[s1 + 8], b2[s2 + 8]);
    }
  }

  /** Groups a reduce call's keys by node only. */
  public static final class ByNode extends WritableComparator {
    public ByNode() {
      super(NodeKey.class);
    }

    @Override
    public int compare(byte[] b1, int s1, int l1, byte[] b2, int s2, int l2) {
      return Long.compare(readLong(b1, s1), readLong(b2, s2));
    }
  }

  /** Sends a node's records to one reducer, whatever their kind. */
  public static final class NodePartitioner<V> extends Partitioner<NodeKey, V> {
    @Override
    public int getPartition(NodeKey key, V value, int partitions) {
      return RootDoc.RootPartitioner.of(key.node, partitions);
    }
  }

  static {
    WritableComparator.define(NodeKey.class, new Comparator());
  }
}
