package io.simhashindex.hfile;

import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
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
 * <p>CENTER (Haveliwala, Gionis and Indyk, "Scalable techniques for clustering the web", WebDB 2000): the
 * links are taken from the most similar down; a link between two documents in no cluster yet makes the
 * first (the smaller id) a centre and the other its member, and a document later linked to a centre joins
 * it.  Every member is linked to its centre itself.  CENTER only looks at links within a component, so it runs
 * per component of the verified links (which the star rounds found): the roots step (a) gives each link its
 * component's root; the centres step (b) sorts each component's links from the most similar down and runs
 * CENTER over them, holding each document of the component in memory (its centre, and that it was seen).
 * Its output is as the star rounds': (member, centre), a centre being its own; the assign and label steps
 * then read it instead.
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

  /** (b) CENTER over one component's links, most similar first: (member, centre) for each member. */
  static final class Centre extends Reducer<Link, NullWritable, LongWritable, LongWritable> {
    @Override
    protected void reduce(Link key, Iterable<NullWritable> nothing, Context context)
        throws IOException, InterruptedException {
      Map<Long, Long> centre = new HashMap<>(); // node -> its centre (a centre's is itself)
      Set<Long> seen = new HashSet<>();
      for (NullWritable ignored : nothing) { // the key moves along with the values, in CENTER's order
        Long a = centre.get(key.a);
        Long b = centre.get(key.b);
        seen.add(key.a);
        seen.add(key.b);
        if (a == null && b == null) {
          centre.put(key.a, key.a);
          centre.put(key.b, key.a);
        } else if (b == null && a == key.a) {
          centre.put(key.b, key.a);
        } else if (a == null && b == key.b) {
          centre.put(key.a, key.b);
        }
      }
      long centres = 0;
      for (Map.Entry<Long, Long> entry : centre.entrySet()) {
        if (entry.getKey().equals(entry.getValue())) {
          centres++;
        } else {
          context.write(new LongWritable(entry.getKey()), new LongWritable(entry.getValue()));
        }
      }
      context.getCounter(PairsJob.COUNTERS, "centres").increment(centres);
      context.getCounter(PairsJob.COUNTERS, "documents linked to no centre").increment(seen.size() - centre.size());
    }
  }
}
