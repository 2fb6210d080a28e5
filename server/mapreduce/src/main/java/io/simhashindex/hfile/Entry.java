package io.simhashindex.hfile;

import java.io.DataInput;
import java.io.DataOutput;
import java.io.IOException;
import org.apache.hadoop.io.Writable;
import org.apache.hadoop.io.WritableUtils;

/**
 * One normalised input record: its position in the input (the last one of an id wins), fingerprint, when
 * the document was first seen (epoch ms; -1: undated), id and sketch; and, once the docs job has decided
 * it, the timestamp its cells carry (-1 before).
 */
public final class Entry implements Writable {
  long seq;
  long fp;
  long seen = -1;
  long stamp = -1;
  byte[] id = Codec.EMPTY;
  byte[] sketch = Codec.EMPTY;

  @Override
  public void write(DataOutput out) throws IOException {
    WritableUtils.writeVLong(out, seq);
    out.writeLong(fp);
    WritableUtils.writeVLong(out, seen);
    WritableUtils.writeVLong(out, stamp);
    WritableUtils.writeVInt(out, id.length);
    out.write(id);
    WritableUtils.writeVInt(out, sketch.length);
    out.write(sketch);
  }

  @Override
  public void readFields(DataInput in) throws IOException {
    seq = WritableUtils.readVLong(in);
    fp = in.readLong();
    seen = WritableUtils.readVLong(in);
    stamp = WritableUtils.readVLong(in);
    id = new byte[WritableUtils.readVInt(in)];
    in.readFully(id);
    sketch = new byte[WritableUtils.readVInt(in)];
    in.readFully(sketch);
  }

  /**
   * The rest of a normalised record after its seq (hfile.py normalized_record): fingerprint, indexed_at ms (-1
   * undated), id length, sketch length, id, sketch, big-endian.
   */
  void readNormalized(long seq, java.io.DataInputStream in) throws IOException {
    this.seq = seq;
    fp = in.readLong();
    seen = in.readLong();
    stamp = -1;
    int idLength = in.readUnsignedShort();
    int sketchLength = in.readUnsignedShort();
    id = new byte[idLength];
    in.readFully(id);
    sketch = new byte[sketchLength];
    in.readFully(sketch);
  }

  void copyFrom(Entry other) {
    seq = other.seq;
    fp = other.fp;
    seen = other.seen;
    stamp = other.stamp;
    id = other.id;
    sketch = other.sketch;
  }
}
