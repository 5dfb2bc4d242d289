// The subscription that sends each write of a site's search index to the refresh queue in its own account: the
// queue trigger maps the blob to its site and refreshes it (Forge__Documentation__Refresh__QueueName). Created after
// the topic's identity may send to the queue and write dead letters (app/docs-events-access.bicep), so the first
// events are not refused.
@description('The docs storage account\'s system topic (app/docs-events.bicep), in this resource group.')
param systemTopicName string
param name string
@description('Blob container the documentation is published to ($web for a static website).')
param containerName string
@description('Forge__Documentation__SearchIndexPath: a blob whose name ends with it is a site\'s search index.')
param indexPath string
@description('Resource id of the refresh queue\'s own storage account (app/refresh-queue.bicep), which holds the queue and the dead-letter container.')
param queueStorageAccountId string
param queueName string
@description('Blob container in that account that events Event Grid could not deliver are written to.')
param deadLetterContainerName string
@description('Delivery attempts of one event before it is dead-lettered (Event Grid allows 1 to 30).')
@minValue(1)
@maxValue(30)
param maxDeliveryAttempts int = 30
@description('Minutes an event is retried before it is dead-lettered (Event Grid allows 1 to 1440).')
@minValue(1)
@maxValue(1440)
param eventTimeToLiveInMinutes int = 1440

resource topic 'Microsoft.EventGrid/systemTopics@2025-02-15' existing = {
  name: systemTopicName
}

// A blob event's subject is /blobServices/default/containers/<container>/blobs/<blob name>: only new or overwritten
// search indexes of that container pass, not the thousands of pages a publish writes beside them: MkDocs' index
// (`indexPath`) or, for a site built with Zensical, `search.json` at the site's root; and a versioned site's
// `versions.json` (a release or a new default refreshes the site's warm versions).
resource subscription 'Microsoft.EventGrid/systemTopics/eventSubscriptions@2025-02-15' = {
  parent: topic
  name: name
  properties: {
    eventDeliverySchema: 'EventGridSchema'
    filter: {
      includedEventTypes: [
        'Microsoft.Storage.BlobCreated'
      ]
      subjectBeginsWith: '/blobServices/default/containers/${containerName}/blobs/'
      advancedFilters: [
        {
          key: 'subject'
          operatorType: 'StringEndsWith'
          values: [
            indexPath
            '/search.json'
            '/versions.json'
          ]
        }
      ]
    }
    // Delivered as the topic's system-assigned identity: no key or SAS, and past the queue account's firewall
    // (trusted-service access) when it has one; a user-assigned identity is refused there.
    deliveryWithResourceIdentity: {
      identity: {
        type: 'SystemAssigned'
      }
      destination: {
        endpointType: 'StorageQueue'
        properties: {
          resourceId: queueStorageAccountId
          queueName: queueName
        }
      }
    }
    retryPolicy: {
      maxDeliveryAttempts: maxDeliveryAttempts
      eventTimeToLiveInMinutes: eventTimeToLiveInMinutes
    }
    // An event still undelivered when the retries run out is kept as a blob instead of dropped, written as the same
    // identity, which an alert on the topic's DeadLetteredCount reports (app/alerts.bicep).
    deadLetterWithResourceIdentity: {
      identity: {
        type: 'SystemAssigned'
      }
      deadLetterDestination: {
        endpointType: 'StorageBlob'
        properties: {
          resourceId: queueStorageAccountId
          blobContainerName: deadLetterContainerName
        }
      }
    }
  }
}
