package io.simhashindex.hfile;

import java.io.DataInput;
import java.io.DataOutput;
import java.io.IOException;
import org.apache.hadoop.io.Writable;
import org.apache.hadoop.io.WritableUtils;

/**
 * What the clusters job passes about one fingerprint: its documents, a peer within the distance, its
 * component's root, or its side of a pair.  Verifying (--min-similarity), documents also carry their
 * sketch and a node id of their own, since the components are then of documents, not fingerprints.
 */
public final class Node implements Writable {
  static final byte DOCS = 0;
  static final byte PEER = 1;
  static final byte ROOT = 2;
  static final byte SIDE = 3; // DOCS of one end of a pair, with the pair's distance

  byte kind;
  long fp; // PEER: the peer; ROOT: the component's root
  byte distance; // PEER, SIDE
  byte[][] docs = new byte[0][]; // DOCS, SIDE: the document ids (fp2docs qualifiers)
  long[] nodes; // DOCS, SIDE when verifying: each document's node id
  byte[][] sketches; // DOCS, SIDE when verifying: each document's sketch (fp2docs value)
  long[] ranks; // DOCS with a --keep rule other than the smallest id: each document's rank ({@link Keep})

  static Node docs(byte[][] docs, long[] nodes, byte[][] sketches) {
    Node node = new Node();
    node.kind = DOCS;
    node.docs = docs;
    node.nodes = nodes;
    node.sketches = sketches;
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

  Node ranked(long[] ranks) {
    this.ranks = ranks;
    return this;
  }

  Node side(byte distance) {
    Node node = docs(docs, nodes, sketches);
    node.kind = SIDE;
    node.distance = distance;
    return node;
  }

  @Override
  public void write(DataOutput out) throws IOException {
    out.writeByte(kind);
    if (kind == PEER || kind == ROOT) {
      out.writeLong(fp);
      out.writeByte(distance);
      return;
    }
    out.writeByte(distance);
    WritableUtils.writeVInt(out, docs.length);
    out.writeBoolean(nodes != null);
    out.writeBoolean(ranks != null);
    for (int i = 0; i < docs.length; i++) {
      WritableUtils.writeVInt(out, docs[i].length);
      out.write(docs[i]);
      if (nodes != null) {
        out.writeLong(nodes[i]);
        WritableUtils.writeVInt(out, sketches[i].length);
        out.write(sketches[i]);
      }
      if (ranks != null) {
        out.writeLong(ranks[i]);
      }
    }
  }

  @Override
  public void readFields(DataInput in) throws IOException {
    kind = in.readByte();
    if (kind == PEER || kind == ROOT) {
      fp = in.readLong();
      distance = in.readByte();
      return;
    }
    distance = in.readByte();
    docs = new byte[WritableUtils.readVInt(in)][];
    boolean verified = in.readBoolean();
    nodes = verified ? new long[docs.length] : null;
    sketches = verified ? new byte[docs.length][] : null;
    ranks = in.readBoolean() ? new long[docs.length] : null;
    for (int i = 0; i < docs.length; i++) {
      docs[i] = new byte[WritableUtils.readVInt(in)];
      in.readFully(docs[i]);
      if (verified) {
        nodes[i] = in.readLong();
        sketches[i] = new byte[WritableUtils.readVInt(in)];
        in.readFully(sketches[i]);
      }
      if (ranks != null) {
        ranks[i] = in.readLong();
      }
    }
  }
}
