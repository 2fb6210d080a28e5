package io.simhashindex.hfile;

import java.io.DataInput;
import java.io.DataOutput;
import java.io.IOException;
import org.apache.hadoop.io.WritableComparable;
import org.apache.hadoop.io.WritableComparator;
import org.apache.hadoop.mapreduce.Partitioner;

/**
 * A reduce key for a secondary sort: a group, then a kind, {@link #FIRST} or {@link #THEN}.  Sorted by group,
 * then kind, and grouped by group only ({@link ByGroup}), so one reduce call meets the group's FIRST records
 * before the others and can pass those on as they come.  The roots step ({@link CentresJob}): a node, its
 * root's record first, then its links.  The parts step ({@link PartsJob}): a drawer prefix, the fingerprints
 * of its drawer rows first, then the parts that fall in it.
 */
public final class GroupKey implements WritableComparable<GroupKey> {
  static final byte FIRST = 0;
  static final byte THEN = 1;
  long group;
  byte kind = THEN;

  public GroupKey() {}

  GroupKey(long group, byte kind) {
    this.group = group;
    this.kind = kind;
  }

  @Override
  public void write(DataOutput out) throws IOException {
    out.writeLong(group);
    out.writeByte(kind);
  }

  @Override
  public void readFields(DataInput in) throws IOException {
    group = in.readLong();
    kind = in.readByte();
  }

  @Override
  public int compareTo(GroupKey o) {
    int c = Long.compare(group, o.group);
    return c != 0 ? c : Byte.compare(kind, o.kind);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof GroupKey && compareTo((GroupKey) o) == 0;
  }

  @Override
  public int hashCode() {
    return Long.hashCode(group);
  }

  /** The sort order, on the serialised bytes: group, then kind. */
  public static final class Comparator extends WritableComparator {
    public Comparator() {
      super(GroupKey.class);
    }

    @Override
    public int compare(byte[] b1, int s1, int l1, byte[] b2, int s2, int l2) {
      int c = Long.compare(readLong(b1, s1), readLong(b2, s2));
      return c != 0 ? c : Byte.compare(b1[s1 + 8], b2[s2 + 8]);
    }
  }

  /** Groups a reduce call's keys by group only. */
  public static final class ByGroup extends WritableComparator {
    public ByGroup() {
      super(GroupKey.class);
    }

    @Override
    public int compare(byte[] b1, int s1, int l1, byte[] b2, int s2, int l2) {
      return Long.compare(readLong(b1, s1), readLong(b2, s2));
    }
  }

  /** Sends a group's records to one reducer, whatever their kind. */
  public static final class GroupPartitioner<V> extends Partitioner<GroupKey, V> {
    @Override
    public int getPartition(GroupKey key, V value, int partitions) {
      return RootDoc.RootPartitioner.of(key.group, partitions);
    }
  }

  static {
    WritableComparator.define(GroupKey.class, new Comparator());
  }
}
