package io.simhashindex.hfile;

import java.io.DataInput;
import java.io.DataOutput;
import java.io.IOException;
import org.apache.hadoop.io.Writable;
import org.apache.hadoop.io.WritableUtils;

/** What the clusters job learns about one fingerprint: its documents, a peer within the distance, or its root. */
public final class Node implements Writable {
  static final byte DOCS = 0;
  static final byte PEER = 1;
  static final byte ROOT = 2;

  byte kind;
  long fp; // PEER: the peer; ROOT: the component's root
  byte distance; // PEER
  byte[][] docs = new byte[0][]; // DOCS: the document ids (fp2docs qualifiers)

  static Node docs(byte[][] docs) {
    Node node = new Node();
    node.kind = DOCS;
    node.docs = docs;
    return node;
  }

  static Node peer(long fp, byte distance) {
    Node node = new Node();
    node.kind = PEER;
    node.fp = fp;
    node.distance = distance;
    return node;
  }

  static Node root(long fp) {
    Node node = new Node();
    node.kind = ROOT;
    node.fp = fp;
    return node;
  }

  @Override
  public void write(DataOutput out) throws IOException {
    out.writeByte(kind);
    if (kind == DOCS) {
      WritableUtils.writeVInt(out, docs.length);
      for (byte[] doc : docs) {
        WritableUtils.writeVInt(out, doc.length);
        out.write(doc);
      }
    } else {
      out.writeLong(fp);
      out.writeByte(distance);
    }
  }

  @Override
  public void readFields(DataInput in) throws IOException {
    kind = in.readByte();
    if (kind == DOCS) {
      docs = new byte[WritableUtils.readVInt(in)][];
      for (int i = 0; i < docs.length; i++) {
        docs[i] = new byte[WritableUtils.readVInt(in)];
        in.readFully(docs[i]);
      }
    } else {
      fp = in.readLong();
      distance = in.readByte();
    }
  }
}
