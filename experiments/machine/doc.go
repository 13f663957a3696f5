// Package machine is what every run says about the machine it ran on and
// what it does to the machine for the run: its description beside the
// paper's two machines (Describe), its load average (ReadLoad), the page
// cache (DropPageCache, Resident), and, on a virtual machine, the guest's
// free page reporting, which a run holds off while it measures
// (freepages.go).
package machine
