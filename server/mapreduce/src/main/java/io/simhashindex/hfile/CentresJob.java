package io.simhashindex.hfile;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.io.NullWritable;
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
    job.setMapOutputKeyClass(LongWritable.class);
    job.setMapOutputValueClass(Link.class);
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
  static final class Ends extends Mapper<Link, NullWritable, LongWritable, Link> {
    @Override
    protected void map(Link link, NullWritable nothing, Context context) throws IOException, InterruptedException {
      context.write(new LongWritable(link.a), link);
    }
  }

  /** (a) A star edge (leaf, root) of the last round: the leaf's root. */
  static final class Roots extends Mapper<LongWritable, LongWritable, LongWritable, Link> {
    @Override
    protected void map(LongWritable leaf, LongWritable root, Context context)
        throws IOException, InterruptedException {
      context.write(leaf, Link.rootOf(root.get()));
    }
  }

  /** (a) A node's links, each with the node's root (a node that is no leaf is its component's root). */
  static final class Rooted extends Reducer<LongWritable, Link, Link, NullWritable> {
    @Override
    protected void reduce(LongWritable node, Iterable<Link> values, Context context)
        throws IOException, InterruptedException {
      long root = node.get();
      List<Link> links = new ArrayList<>();
      for (Link value : values) {
        if (value.kind == Link.ROOT) {
          root = value.root;
        } else {
          links.add(value.copy()); // Hadoop reuses the value object
        }
      }
      for (Link link : links) {
        link.root = root;
        context.write(link, NullWritable.get());
      }
    }
  }

  /** (b) Star clusters over one component's links, most similar first ({@link Center}): (member, centre). */
  static final class Centre extends Reducer<Link, NullWritable, LongWritable, LongWritable> {
    @Override
    protected void reduce(Link key, Iterable<NullWritable> nothing, Context context)
        throws IOException, InterruptedException {
      Center center = new Center();
      for (NullWritable ignored : nothing) { // the key moves along with the values, in CENTER's order
        center.add(key.a, key.b);
      }
      if (!center.merge()) {
        context.getCounter(PairsJob.COUNTERS, "components too large to merge stars").increment(1);
      }
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
