package io.simhashindex.hfile;

import java.util.Locale;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.Cell;

/**
 * Which document a cluster keeps, and so names it (--keep): the smallest id, the earliest indexed (the
 * fp2docs cell's timestamp, which is the document's indexed_at), or the longest (the most distinct shingles
 * its sketch counts; a document whose sketch counts none comes after every one that does).  A document's
 * rank orders a cluster's documents, lowest first; ties fall to the smallest id.
 */
enum Keep {
  SMALLEST_ID,
  EARLIEST,
  LONGEST;

  static final String KEY = "simhash.clusters.keep";

  static Keep of(Configuration conf) {
    return parse(conf.get(KEY, "smallest-id"));
  }

  static Keep parse(String name) {
    for (Keep rule : values()) {
      if (rule.option().equals(name)) {
        return rule;
      }
    }
    throw new IllegalArgumentException("--keep must be smallest-id, earliest or longest, got " + name);
  }

  /** Its name on the command line. */
  String option() {
    return name().toLowerCase(Locale.ROOT).replace('_', '-');
  }

  /** Whether documents carry a rank through the job: the smallest id needs none, the sort has it. */
  boolean ranked() {
    return this != SMALLEST_ID;
  }

  /**
   * Whether a document's rank comes from its sketch.  The join's scan of fp2docs reads keys (and their
   * timestamps) alone, so the sketches are fetched for the member fingerprints only, as verifying does.
   */
  boolean ranksBySketch() {
    return this == LONGEST;
  }

  /** A document's rank from its fp2docs cell's key; 0 under a rule that ranks by sketch ({@link #longest}). */
  long rank(Cell cell) {
    return this == EARLIEST ? cell.getTimestamp() : 0;
  }

  /**
   * The longest rule's rank of a document from its sketch: minus the distinct shingles it counts.  A sketch
   * that counts none, or none at all (the document deleted since the scan), comes after every one that does.
   */
  static long longest(byte[] sketch) {
    long shingles = sketch == null ? -1 : Sketches.shingles(sketch);
    return shingles < 0 ? Long.MAX_VALUE : -shingles;
  }
}
