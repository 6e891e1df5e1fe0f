import QtQuick
import QtQuick.Controls

// A menu (of AppMenuItems) whose items show their action's shortcut on the right and whose width fits its
// longest entry, so that no entry is elided.
Menu {
    id: menu
    property real maximumWidth: 100000   // at most this wide (the window's width)

    // The widest entry decides the width; separators and the padding are added around it.
    width: {
        let widest = 200
        for (let i = 0; i < count; ++i) {
            const item = itemAt(i)
            if (item && item.contentItem)
                widest = Math.max(widest, item.contentItem.implicitWidth + item.leftPadding + item.rightPadding)
        }
        return Math.min(widest + leftPadding + rightPadding, maximumWidth)
    }

    delegate: AppMenuItem {}
}
