package io.simhashindex.hfile;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import org.junit.jupiter.api.Test;

/** The timestamp a loaded document's cells carry (DocsJob.stampOf), and an Entry's trip through the shuffle. */
class StampsTest {
  private static final long LOAD = 1_800_000_000_000L;

  @Test
  void anUndatedRecordTakesTheLoadsTimestampWhateverItsRowHolds() {
    assertEquals(LOAD, DocsJob.stampOf(-1, -1, LOAD));
    assertEquals(LOAD, DocsJob.stampOf(-1, LOAD - 5, LOAD));
  }

  @Test
  void aDatedRecordKeepsItsDateOverANewOrOlderRow() {
    long monthAgo = LOAD - 30L * 86_400_000L;
    assertEquals(monthAgo, DocsJob.stampOf(monthAgo, -1, LOAD));
    assertEquals(monthAgo, DocsJob.stampOf(monthAgo, monthAgo - 1000, LOAD));
  }

  @Test
  void aDatedRecordMovesPastItsRowsNewestCellOrDeleteMarkerButNeverPastTheLoad() {
    long weekAgo = LOAD - 7L * 86_400_000L;
    long deleted = LOAD - 3_600_000L; // a delete marker an hour before the load would hide the week-old date
    assertEquals(deleted + 1, DocsJob.stampOf(weekAgo, deleted, LOAD));
    assertEquals(weekAgo + 1, DocsJob.stampOf(weekAgo, weekAgo, LOAD));
    assertEquals(LOAD, DocsJob.stampOf(weekAgo, LOAD + 10, LOAD)); // a live writer's, after the load began
  }

  @Test
  void anEntryKeepsItsDateAndStampThroughTheShuffle() throws IOException {
    Entry entry = new Entry();
    entry.seq = 7;
    entry.fp = 0xF00DL;
    entry.seen = LOAD - 1;
    entry.stamp = LOAD;
    entry.id = new byte[] {'a', 'b'};
    entry.sketch = new byte[] {1, 2, 3};
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    entry.write(new DataOutputStream(bytes));
    Entry back = new Entry();
    back.readFields(new DataInputStream(new ByteArrayInputStream(bytes.toByteArray())));
    assertEquals(entry.seq, back.seq);
    assertEquals(entry.fp, back.fp);
    assertEquals(entry.seen, back.seen);
    assertEquals(entry.stamp, back.stamp);
    assertArrayEquals(entry.id, back.id);
    assertArrayEquals(entry.sketch, back.sketch);
    Entry undated = new Entry();
    undated.copyFrom(back);
    undated.seen = -1;
    bytes.reset();
    undated.write(new DataOutputStream(bytes));
    back.readFields(new DataInputStream(new ByteArrayInputStream(bytes.toByteArray())));
    assertEquals(-1, back.seen);
  }
}
