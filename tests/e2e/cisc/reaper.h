// tests/e2e/cisc/reaper.h - whether a device's reaper (the process that
// finishes a killed device's mount, comm "cisc-reaper") still runs for an
// image: the crash tests wait for it before the next `cisc up`.
#pragma once

#include "tests/e2e/fuse/mount_fixture.h"   // ReadFile

#include <dirent.h>

#include <algorithm>
#include <string>

namespace e2e {

// Whether a reaper of a device on image img still runs (a forked copy of
// `cisc up ... img ...` named cisc-reaper). Once its device is gone it
// detaches the mount it watched if that mount's device number is still
// the one it saw; a new mount on the same point may have got that number
// again, so the next `cisc up` waits for it.
inline bool ReaperRuns(const std::string &img)
{
    DIR *d = opendir("/proc");
    struct dirent *de;
    bool found = false;
    while (d && !found && (de = readdir(d))) {
        if (de->d_name[0] < '0' || de->d_name[0] > '9')
            continue;
        std::string p = std::string("/proc/") + de->d_name;
        if (ReadFile(p + "/comm") != "cisc-reaper\n")
            continue;
        std::string cmd = ReadFile(p + "/cmdline");
        std::replace(cmd.begin(), cmd.end(), '\0', ' ');
        found = cmd.find(" " + img + " ") != std::string::npos;
    }
    if (d)
        closedir(d);
    return found;
}

}  // namespace e2e
