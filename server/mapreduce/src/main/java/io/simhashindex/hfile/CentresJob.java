package io.simhashindex.hfile;

import java.io.IOException;
import java.util.Locale;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.io.NullWritable;
import org.apache.hadoop.mapreduce.Counter;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.Mapper;
import org.apache.hadoop.mapreduce.Reducer;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormat;
import org.apache.hadoop.mapreduce.lib.input.MultipleInputs;
import org.apache.hadoop.mapreduce.lib.input.SequenceFileInputFormat;
import org.apache.hadoop.mapreduce.lib.output.MultipleOutputs;
import org.apache.hadoop.mapreduce.lib.output.SequenceFileOutputFormat;

/**
 * Clusters, verifying with {@code --clustering centres}: star clusters around a centre instead of connected
 * components, so that no chain of links puts two documents a reader calls different in one cluster.
 *
 * <p>The stars are CENTER's, then merged where two centres are each linked to every member of the other's
 * star ({@link Center}).  They only look at links within a component, so they are made per component of the
 * verified links (which the star rounds found): the roots step (a) gives each link its component's root; the
 * centres step (b) sorts each component's links from the most similar down and makes its stars, holding the
 * component's documents and links in memory.  Its output is as the star rounds': (member, centre), a
 * centre being its own; the assign and label steps then read it instead.
 */
final class CentresJob {
  static final String KEY = "simhash.clusters.centres"; // true: CENTER; unset: connected components
  static final String SCORED = "scored"; // the join's and the confirm's verified links, as Links

  private CentresJob() {}

  static boolean wanted(Configuration conf) {
    return conf.getBoolean(KEY, false);
  }

  /** The join's and the confirm's output of verified links, when the centres step will read them. */
  static void scored(Job job) {
    if (wanted(job.getConfiguration())) {
      MultipleOutputs.addNamedOutput(job, SCORED, SequenceFileOutputFormat.class, Link.class, NullWritable.class);
    }
  }

  /** (a) The star rounds' last edges and the verified links in; the links with their roots out. */
  static void roots(Job job, Path stars, Path[] scored) throws IOException {
    MultipleInputs.addInputPath(job, stars, SequenceFileInputFormat.class, Roots.class);
    for (Path links : scored) {
      FileStatus[] found = links.getFileSystem(job.getConfiguration()).globStatus(links);
      if (found != null && found.length > 0) { // none: no document pair verified there
        MultipleInputs.addInputPath(job, links, SequenceFileInputFormat.class, Ends.class);
      }
    }
    job.setMapOutputKeyClass(GroupKey.class);
    job.setMapOutputValueClass(Link.class);
    job.setPartitionerClass(GroupKey.GroupPartitioner.class);
    job.setSortComparatorClass(GroupKey.Comparator.class);
    job.setGroupingComparatorClass(GroupKey.ByGroup.class);
    job.setReducerClass(Rooted.class);
    job.setOutputKeyClass(Link.class);
    job.setOutputValueClass(NullWritable.class);
  }

  /** (b) The rooted links in, sorted and grouped by component; (member, centre) out. */
  static void centres(Job job, Path rooted) throws IOException {
    job.setInputFormatClass(SequenceFileInputFormat.class);
    FileInputFormat.addInputPath(job, rooted);
    job.setMapperClass(Mapper.class);
    job.setMapOutputKeyClass(Link.class);
    job.setMapOutputValueClass(NullWritable.class);
    job.setPartitionerClass(Link.RootPartitioner.class);
    job.setGroupingComparatorClass(Link.ByRoot.class);
    job.setReducerClass(Centre.class);
    job.setOutputKeyClass(LongWritable.class);
    job.setOutputValueClass(LongWritable.class);
  }

  /** (a) A verified link, to its first end. */
  static final class Ends extends Mapper<Link, NullWritable, GroupKey, Link> {
    private final GroupKey key = new GroupKey();

    @Override
    protected void map(Link link, NullWritable nothing, Context context) throws IOException, InterruptedException {
      key.group = link.a;
      context.write(key, link);
    }
  }

  /** (a) A star edge (leaf, root) of the last round: the leaf's root. */
  static final class Roots extends Mapper<LongWritable, LongWritable, GroupKey, Link> {
    private final GroupKey key = new GroupKey(0, GroupKey.FIRST);

    @Override
    protected void map(LongWritable leaf, LongWritable root, Context context)
        throws IOException, InterruptedException {
      key.group = leaf.get();
      context.write(key, Link.rootOf(root.get()));
    }
  }

  /**
   * (a) A node's links, each with the node's root (a node that is no leaf is its component's root).  The
   * root's record comes first ({@link GroupKey}), so the links stream through.
   */
  static final class Rooted extends Reducer<GroupKey, Link, Link, NullWritable> {
    @Override
    protected void reduce(GroupKey key, Iterable<Link> values, Context context)
        throws IOException, InterruptedException {
      long node = key.group; // the key object moves along with the values: its group stays, its kind changes
      long root = node;
      boolean linked = false;
      for (Link value : values) {
        if (value.kind == Link.ROOT) {
          if (linked) {
            throw new IOException("node " + node + ": its root came after its links (the roots step's sort)");
          }
          root = value.root;
        } else {
          linked = true;
          value.root = root;
          context.write(value, NullWritable.get());
        }
      }
    }
  }

  /**
   * (b) One component's stars: its links in CENTER's order ({@code key} moves along with {@code links}), then
   * the merge; {@code unmerged} counts a component too large to merge.  A component too large for the heap
   * fails its task with an IOException naming it and how to give the reducers more, not a bare
   * OutOfMemoryError.
   */
  static Center stars(Link key, Iterable<?> links, Counter unmerged) throws IOException {
    long root = key.root;
    Center center = new Center();
    try {
      for (Object ignored : links) {
        center.add(key.a, key.b);
      }
      if (!center.merge()) {
        unmerged.increment(1);
      }
      return center;
    } catch (OutOfMemoryError e) {
      int documents = center.documents();
      center = null; // what the component took can be collected before the message is made
      throw new IOException(String.format(Locale.ROOT, "the component of root node %d did not fit this reducer's"
          + " heap (%d MB) after %d of its documents: give the reducers more memory (-D"
          + " mapreduce.reduce.memory.mb=... -D mapreduce.reduce.java.opts=-Xmx..., about 55 bytes a document;"
          + " docs/loading.md), or cluster with --clustering components", root,
          Runtime.getRuntime().maxMemory() >> 20, documents), e);
    }
  }

  /** (b) Star clusters over one component's links, most similar first ({@link Center}): (member, centre). */
  static final class Centre extends Reducer<Link, NullWritable, LongWritable, LongWritable> {
    @Override
    protected void reduce(Link key, Iterable<NullWritable> nothing, Context context)
        throws IOException, InterruptedException {
      Center center = stars(key, nothing,
          context.getCounter(PairsJob.COUNTERS, "components too large to merge stars"));
      long centres = 0;
      long starred = 0;
      for (int i = 0; i < center.documents(); i++) {
        int c = center.centreOf(i);
        if (c == i) {
          centres++;
        } else if (c >= 0) {
          context.write(new LongWritable(center.node(i)), new LongWritable(center.node(c)));
        }
        starred += c >= 0 ? 1 : 0;
      }
      context.getCounter(PairsJob.COUNTERS, "centres").increment(centres);
      context.getCounter(PairsJob.COUNTERS, "documents linked to no centre").increment(center.documents() - starred);
    }
  }
}
