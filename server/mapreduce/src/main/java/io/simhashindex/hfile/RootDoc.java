package io.simhashindex.hfile;

import java.io.DataInput;
import java.io.DataOutput;
import java.io.IOException;
import org.apache.hadoop.io.WritableComparable;
import org.apache.hadoop.io.WritableComparator;
import org.apache.hadoop.io.WritableUtils;
import org.apache.hadoop.mapreduce.Partitioner;

/**
 * A document of a component: sorted by the component's root, then by its part, its rank and its id
 * (unsigned bytes), so a reduce call per root (the {@link ByRoot} grouping) sees the kept document first.
 *
 * <p>With the smallest id kept, each document comes once, in {@link #MEMBER}: the first is the kept one.
 * With a {@link Keep} rule that ranks, each also comes in {@link #CANDIDATE} with its rank: the first of
 * those is the kept one, and the members that follow, in id order, show a document at two fingerprints
 * side by side whatever its ranks there.
 */
public final class RootDoc implements WritableComparable<RootDoc> {
  static final byte CANDIDATE = 0;
  static final byte MEMBER = 1;
  long root;
  byte part = MEMBER;
  long rank;
  byte[] doc = Codec.EMPTY;

  public RootDoc() {}

  RootDoc(long root, byte[] doc) {
    this.root = root;
    this.doc = doc;
  }

  static RootDoc candidate(long root, long rank, byte[] doc) {
    RootDoc key = new RootDoc(root, doc);
    key.part = CANDIDATE;
    key.rank = rank;
    return key;
  }

  @Override
  public void write(DataOutput out) throws IOException {
    out.writeLong(root);
    out.writeByte(part);
    out.writeLong(rank);
    WritableUtils.writeVInt(out, doc.length);
    out.write(doc);
  }

  @Override
  public void readFields(DataInput in) throws IOException {
    root = in.readLong();
    part = in.readByte();
    rank = in.readLong();
    doc = new byte[WritableUtils.readVInt(in)];
    in.readFully(doc);
  }

  @Override
  public int compareTo(RootDoc o) {
    int c = Long.compare(root, o.root);
    if (c == 0) {
      c = Byte.compare(part, o.part);
    }
    if (c == 0) {
      c = Long.compare(rank, o.rank);
    }
    return c != 0 ? c : WritableComparator.compareBytes(doc, 0, doc.length, o.doc, 0, o.doc.length);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof RootDoc && compareTo((RootDoc) o) == 0;
  }

  @Override
  public int hashCode() {
    return Long.hashCode(root);
  }

  /** The sort order, on the serialised bytes. */
  public static final class Comparator extends WritableComparator {
    public Comparator() {
      super(RootDoc.class);
    }

    @Override
    public int compare(byte[] b1, int s1, int l1, byte[] b2, int s2, int l2) {
      int c = Long.compare(readLong(b1, s1), readLong(b2, s2));
      if (c == 0) {
        c = Byte.compare(b1[s1 + 8], b2[s2 + 8]);
      }
      if (c == 0) {
        c = Long.compare(readLong(b1, s1 + 9), readLong(b2, s2 + 9));
      }
      if (c != 0) {
        return c;
      }
      int d = 8 + 1 + 8; // root, part, rank: then the id's length and bytes
      try {
        int n1 = readVInt(b1, s1 + d);
        int n2 = readVInt(b2, s2 + d);
        int h1 = s1 + d + WritableUtils.decodeVIntSize(b1[s1 + d]);
        int h2 = s2 + d + WritableUtils.decodeVIntSize(b2[s2 + d]);
        return compareBytes(b1, h1, n1, b2, h2, n2);
      } catch (IOException e) {
        throw new IllegalArgumentException(e);
      }
    }
  }

  /** Groups a reduce call's keys by root only. */
  public static final class ByRoot extends WritableComparator {
    public ByRoot() {
      super(RootDoc.class);
    }

    @Override
    public int compare(byte[] b1, int s1, int l1, byte[] b2, int s2, int l2) {
      return Long.compare(readLong(b1, s1), readLong(b2, s2));
    }
  }

  /** Sends a root's documents to one reducer. */
  public static final class RootPartitioner<V> extends Partitioner<RootDoc, V> {
    @Override
    public int getPartition(RootDoc key, V value, int partitions) {
      return of(key.root, partitions);
    }

    /** A root's reducer: its bits mixed first, since roots are the smallest node of a component. */
    static int of(long root, int partitions) {
      return (Long.hashCode(root * 0x9E3779B97F4A7C15L) & Integer.MAX_VALUE) % partitions;
    }
  }

  static {
    WritableComparator.define(RootDoc.class, new Comparator());
  }
}
