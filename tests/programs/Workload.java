public class Workload {
  public static void main(String[] a) throws Exception {
    Thread[] ts = new Thread[8]; final long[] s = new long[1];
    for (int i = 0; i < 8; i++) { ts[i] = new Thread(() -> { for (int j = 0; j < 100000; j++) synchronized (s) { s[0]++; } }); ts[i].start(); }
    for (Thread t : ts) t.join();
    String x = null; try { x.length(); } catch (NullPointerException e) { System.out.println("npe caught"); }
    System.out.println("sum " + s[0]);
    Process p = new ProcessBuilder("/bin/echo", "child").start(); System.out.println(new String(p.getInputStream().readAllBytes()).trim() + " " + p.waitFor());
  }
}
