package io.simhashindex.hfile;

import java.io.DataInput;
import java.io.DataOutput;
import java.io.IOException;
import org.apache.hadoop.io.WritableComparable;
import org.apache.hadoop.io.WritableComparator;

/** Two longs: a pair of fingerprints (a < b, unsigned), or a hot group's (position, fingerprint). */
public final class FpPair implements WritableComparable<FpPair> {
  long a;
  long b;

  public FpPair() {}

  FpPair(long a, long b) {
    this.a = a;
    this.b = b;
  }

  /** The pair in canonical order: the unsigned smaller first. */
  static FpPair of(long x, long y) {
    return Long.compareUnsigned(x, y) < 0 ? new FpPair(x, y) : new FpPair(y, x);
  }

  @Override
  public void write(DataOutput out) throws IOException {
    out.writeLong(a);
    out.writeLong(b);
  }

  @Override
  public void readFields(DataInput in) throws IOException {
    a = in.readLong();
    b = in.readLong();
  }

  @Override
  public int compareTo(FpPair o) {
    int c = Long.compareUnsigned(a, o.a);
    return c != 0 ? c : Long.compareUnsigned(b, o.b);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof FpPair && ((FpPair) o).a == a && ((FpPair) o).b == b;
  }

  @Override
  public int hashCode() {
    return Long.hashCode(a * 0x9E3779B97F4A7C15L ^ b);
  }

  /** Big-endian longs compare as unsigned bytes: the sort never deserialises. */
  public static final class Comparator extends WritableComparator {
    public Comparator() {
      super(FpPair.class);
    }

    @Override
    public int compare(byte[] b1, int s1, int l1, byte[] b2, int s2, int l2) {
      return compareBytes(b1, s1, 16, b2, s2, 16);
    }
  }

  static {
    WritableComparator.define(FpPair.class, new Comparator());
  }
}
