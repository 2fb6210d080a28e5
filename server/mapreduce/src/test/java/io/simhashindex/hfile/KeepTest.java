package io.simhashindex.hfile;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.hadoop.hbase.KeyValue;
import org.junit.jupiter.api.Test;

/** Which document a cluster keeps: the rules' ranks, and the order the label step sees its documents in. */
class KeepTest {
  private static final byte[] ROW = new byte[8];
  private static final byte[] FAMILY = "d".getBytes(StandardCharsets.UTF_8);

  private static KeyValue cell(String doc, long stamp, byte[] sketch) {
    return new KeyValue(ROW, FAMILY, doc.getBytes(StandardCharsets.UTF_8), stamp, sketch);
  }

  private static byte[] counted(int shingles) {
    byte[] sketch = new byte[5 + 512];
    sketch[0] = 3;
    sketch[1] = (byte) (shingles >>> 24);
    sketch[2] = (byte) (shingles >>> 16);
    sketch[3] = (byte) (shingles >>> 8);
    sketch[4] = (byte) shingles;
    return sketch;
  }

  @Test
  void rulesRankByStampOrByCountedShinglesAndNameTheOption() {
    assertEquals(1234L, Keep.EARLIEST.rank(cell("a", 1234L, new byte[0])));
    assertEquals(0L, Keep.LONGEST.rank(cell("a", 1L, new byte[0]))); // the keys say nothing of its length
    assertTrue(Keep.LONGEST.ranksBySketch() && !Keep.EARLIEST.ranksBySketch());
    assertEquals(-70_000L, Keep.longest(counted(70_000)));
    byte[] uncounted = new byte[257];
    uncounted[0] = 1;
    assertEquals(Long.MAX_VALUE, Keep.longest(uncounted)); // format 1 counts nothing
    assertEquals(Long.MAX_VALUE, Keep.longest(null)); // deleted since the scan
    assertEquals(0L, Keep.SMALLEST_ID.rank(cell("a", 99L, counted(5))));
    assertEquals(Keep.LONGEST, Keep.parse("longest"));
    assertEquals("smallest-id", Keep.SMALLEST_ID.option());
    IllegalArgumentException bad = assertThrows(IllegalArgumentException.class, () -> Keep.parse("oldest"));
    assertTrue(bad.getMessage().contains("--keep"), bad.getMessage());
  }

  private static byte[] bytes(RootDoc key) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    key.write(new DataOutputStream(out));
    return out.toByteArray();
  }

  @Test
  void candidatesComeFirstByRankThenIdThenMembersByIdInBothComparisons() throws IOException {
    byte[] a = "a".getBytes(StandardCharsets.UTF_8);
    byte[] b = "b".getBytes(StandardCharsets.UTF_8);
    List<RootDoc> want = Arrays.asList(
        RootDoc.candidate(1, -5, b), RootDoc.candidate(1, 7, a), RootDoc.candidate(1, 7, b),
        new RootDoc(1, a), new RootDoc(1, b), RootDoc.candidate(2, Long.MIN_VALUE, a), new RootDoc(2, a));
    List<RootDoc> objects = new ArrayList<>(want);
    java.util.Collections.reverse(objects);
    objects.sort(RootDoc::compareTo);
    assertEquals(want, objects);
    RootDoc.Comparator raw = new RootDoc.Comparator();
    for (int i = 0; i < want.size(); i++) {
      for (int j = 0; j < want.size(); j++) {
        byte[] x = bytes(want.get(i));
        byte[] y = bytes(want.get(j));
        assertEquals(Integer.signum(Integer.compare(i, j)), Integer.signum(raw.compare(x, 0, x.length, y, 0, y.length)),
            i + " against " + j);
      }
    }
    byte[] one = bytes(want.get(0));
    byte[] member = bytes(want.get(4));
    assertEquals(0, new RootDoc.ByRoot().compare(one, 0, one.length, member, 0, member.length)); // one call
  }
}
