package io.simhashindex.hfile;

import java.io.DataInput;
import java.io.DataOutput;
import java.io.IOException;
import org.apache.hadoop.io.WritableComparable;
import org.apache.hadoop.io.WritableComparator;
import org.apache.hadoop.io.WritableUtils;
import org.apache.hadoop.mapreduce.Partitioner;

/**
 * A verified link between two documents (nodes {@code a} and {@code b}), with its similarity in ten
 * thousandths (as the pairs output prints it), for the centres step ({@link CentresJob}).  {@code a}'s id is
 * the smaller (unsigned bytes).  Sorted by component root, then from the most similar down, then by the
 * ends' ids, so one reduce call ({@link ByRoot}) sees a component's links in the order CENTER takes them,
 * whichever tasks numbered its nodes.  In the roots step, a record of kind {@link #ROOT} carries only
 * the root of the node it is sent to.
 */
public final class Link implements WritableComparable<Link> {
  static final byte LINK = 0;
  static final byte ROOT = 1;
  byte kind = LINK;
  long root;
  int score; // similarity * 10^4, rounded
  long a;
  long b;
  byte[] aId = Codec.EMPTY;
  byte[] bId = Codec.EMPTY;

  public Link() {}

  /** A link, its ends ordered by id. */
  static Link of(long x, byte[] xId, long y, byte[] yId, double similarity) {
    Link link = new Link();
    boolean swap = WritableComparator.compareBytes(xId, 0, xId.length, yId, 0, yId.length) > 0;
    link.a = swap ? y : x;
    link.b = swap ? x : y;
    link.aId = swap ? yId : xId;
    link.bId = swap ? xId : yId;
    link.score = score(similarity);
    return link;
  }

  static Link rootOf(long root) {
    Link link = new Link();
    link.kind = ROOT;
    link.root = root;
    return link;
  }

  /** The similarity as the links are ordered and the pairs output prints it: ten thousandths. */
  static int score(double similarity) {
    return (int) Math.round(similarity * 10_000);
  }

  @Override
  public void write(DataOutput out) throws IOException {
    out.writeByte(kind);
    out.writeLong(root);
    out.writeInt(score);
    out.writeLong(a);
    out.writeLong(b);
    WritableUtils.writeVInt(out, aId.length);
    out.write(aId);
    WritableUtils.writeVInt(out, bId.length);
    out.write(bId);
  }

  @Override
  public void readFields(DataInput in) throws IOException {
    kind = in.readByte();
    root = in.readLong();
    score = in.readInt();
    a = in.readLong();
    b = in.readLong();
    aId = new byte[WritableUtils.readVInt(in)];
    in.readFully(aId);
    bId = new byte[WritableUtils.readVInt(in)];
    in.readFully(bId);
  }

  @Override
  public int compareTo(Link o) {
    int c = Long.compare(root, o.root);
    if (c == 0) {
      c = Integer.compare(o.score, score); // the most similar first
    }
    if (c == 0) {
      c = WritableComparator.compareBytes(aId, 0, aId.length, o.aId, 0, o.aId.length);
    }
    if (c == 0) {
      c = WritableComparator.compareBytes(bId, 0, bId.length, o.bId, 0, o.bId.length);
    }
    if (c == 0) {
      c = Long.compare(a, o.a); // one id at two fingerprints: two nodes
    }
    return c != 0 ? c : Long.compare(b, o.b);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Link && compareTo((Link) o) == 0;
  }

  @Override
  public int hashCode() {
    return Long.hashCode(root);
  }

  /** Groups a reduce call's links by root only. */
  public static final class ByRoot extends WritableComparator {
    public ByRoot() {
      super(Link.class, true);
    }

    @Override
    @SuppressWarnings("rawtypes")
    public int compare(WritableComparable x, WritableComparable y) {
      return Long.compare(((Link) x).root, ((Link) y).root);
    }
  }

  /** Sends a root's links to one reducer. */
  public static final class RootPartitioner<V> extends Partitioner<Link, V> {
    @Override
    public int getPartition(Link key, V value, int partitions) {
      return RootDoc.RootPartitioner.of(key.root, partitions);
    }
  }
}
